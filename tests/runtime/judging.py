"""The judge (#42): every tool of a derived package called once with valid arguments generated
from its own schema, against a local server that records what it was sent, each request then
validated against the original spec by openapi-core, an implementation that is not ours. Used by
the suite over the fixture specs (`test_judge.py`) and by `just sweep` over the public directory.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml
from openapi_core import OpenAPI
from openapi_core.configurations import Config
from openapi_core.templating.paths.iterators import TemplatePathsIterator
from openapi_core.testing import MockRequest

from skillpress.app.base.package_dir import write_package_dir
from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.servers import (
    host_of,
    placeholder_host,
    relative_server,
    server_from_list,
)
from skillpress.format.load import load_document
from skillpress.host import SkillHost
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.calling.request import CallRefused
from tests.runtime.hostile_api import HostileApi
from tests.runtime.judge_args import valid_arguments


class _Credentials(Mapping[str, str]):
    """Every credential variable set (a distinct dummy each), an OAuth client's id and secret
    never: a token is never fetched from the internet. A header sent beside the first credential
    (`auth.also`, such as apisetu's X-APISETU-CLIENTID) or another scheme's own (`auth.others`)
    is a credential even when its variable ends in _CLIENT_ID or _CLIENT_SECRET."""

    def __init__(self, beside: frozenset[str] = frozenset()) -> None:
        self.beside = beside

    def __getitem__(self, key: str) -> str:
        if key.endswith(("_CLIENT_ID", "_CLIENT_SECRET")) and key not in self.beside:
            raise KeyError(key)
        return f"judge-{key.lower()}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


# openapi-core keeps the regex of 4,096 path templates: a spec of more (Graph's 11,422) compiled
# every template again for every request judged, 400 requests past the sweep's ten minutes
TemplatePathsIterator._get_path_parser = lru_cache(maxsize=65_536)(  # type: ignore[method-assign]
    TemplatePathsIterator._get_path_parser.__wrapped__  # type: ignore[attr-defined]
)


@dataclass
class Verdict:
    called: int = 0
    judged: bool = True  # False: a Swagger 2 document, called but not judged
    unjudged: str = ""  # why not, when openapi-core cannot read the document
    judged_requests: int = 0
    elsewhere: list[str] = field(default_factory=list)  # a server on another host: not sent
    ungenerated: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    explained: dict[Explained, list[str]] = field(default_factory=dict)


def _local_servers(value: Any, own_host: str, local: str) -> Any:
    """`value` (a document) with every server on the API's own host moved to `local`, its path
    kept (variables with a default filled in, as derive fills them)."""
    if isinstance(value, list):
        return [_local_servers(v, own_host, local) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _local_servers(v, own_host, local) for k, v in value.items() if k != "servers"}
    if isinstance(value.get("servers"), list):
        moved = []
        for server in value["servers"]:
            url = _own_server({"servers": [server]}) if isinstance(server, dict) else None
            raw = server.get("url") if isinstance(server, dict) else None
            # on the API's own host; or any host where the own is a stand-in (`*.local`):
            # derive moves those to the base URL given (`override_server`)
            if url and (host_of(url) == own_host or placeholder_host(own_host)):
                # (`https://cloud.redhat.com/{basePath}` with basePath `/api/…`: one slash,
                # as derive joins it)
                path = re.sub("/{2,}", "/", urlsplit(url).path).rstrip("/")
                kept = {
                    k: v
                    for k, v in (server.get("variables") or {}).items()
                    if "{" + k + "}" in path
                }
                moved.append({"url": local + path, **({"variables": kept} if kept else {})})
            elif isinstance(raw, str) and not raw.startswith(("http://", "https://")):
                moved.append({"url": local + "/" + raw.lstrip("/")})
            else:
                moved.append(server)
        out["servers"] = moved
    return out


@dataclass(frozen=True)
class Explained:
    """A violation the judge reports that is not a wrong request of ours: openapi-core's own
    limit (`limit`), a spec that makes the judge's value (or every value) invalid (`spec`), or
    a choice of ours against the letter of a spec, with its reason (`ours`)."""

    spec: str  # the spec's file name, or a pattern of them (`amazonaws.com/*`)
    tool: str  # a tool's name, or "*" for every tool of the spec
    says: str  # a fragment of openapi-core's message
    kind: str
    reason: str
    also: str = ""  # a second fragment the message holds too


OPEN_ONE_OF = (
    "a oneOf whose branches are open objects requiring the same fields (or none): whatever one"
    " admits, the others admit too, so by the letter no value is valid (ShipEngine's rates by"
    " shipment id or by shipment, Zoom's settings); derive offers anyOf, what the API means"
)

NOT_BUILT = "arguments not built: no value meets the tool's schema"

EXPLAINED: tuple[Explained, ...] = (
    Explained(
        "*",
        "*",
        "header parameter: Content-Type",
        "limit",
        "OAS: a header parameter named Content-Type, Accept or Authorization SHALL be ignored;"
        " openapi-core holds the request to it (the runtime writes Content-Type for the body)",
    ),
    Explained(
        "*",
        "*",
        "header parameter: Accept",
        "limit",
        "as above, for an Accept header parameter",
    ),
    Explained(
        "*",
        "*",
        "header parameter: Authorization",
        "limit",
        "as above, for an Authorization header parameter (the credential is the scheme's)",
    ),
    Explained(
        "*",
        "*",
        "value='judge-",
        "limit",
        "the judge's stand-in for a credential read from the environment (`judge-<variable>`)"
        " is not of the format or pattern the spec gives that header or query parameter",
    ),
    Explained(
        "*",
        "*",
        "Missing required path parameter",
        "spec",
        "a parameter declared `in: path` whose template is in the path key's query"
        " (`/alerts?lat={lat}`): it is sent as that query parameter; openapi-core finds no path"
        " parameter",
        also="?",
    ),
    Explained(
        "*",
        "*",
        "MediaTypeDeserializeError(mimetype='application/json'",
        "spec",
        'a parameter declared with JSON `content` is checked as a JSON text (`\\"abc\\"` with its'
        " quotes); the API's own examples take the value as written, as it is sent",
    ),
    Explained(
        "*",
        "*",
        "Schemes not valid for any requirement",
        "limit",
        "a mutualTLS scheme: a client certificate, which a call presents at the TLS layer, not"
        " in the request; openapi-core finds no credential in the request",
        also="MutualTls",
    ),
    Explained(
        "*",
        "*",
        "CastError(value='{",
        "spec",
        "a query parameter that is a list of objects: OAS defines no way to write an object"
        " inside a list in a query (AWS's query protocol writes `Tags.member.1.Key=…`, which its"
        " converted document cannot say); each is sent as compact JSON",
        also="Query parameter error",
    ),
    Explained(
        "*",
        "*",
        "is not of type 'object'",
        "spec",
        "as above: a list of objects in a query, each sent as compact JSON",
        also="Invalid query parameter",
    ),
    Explained(
        "*",
        "*",
        "CastError(value='[",
        "spec",
        "a query parameter that is a list of lists (Sinao's `conditions`, `[[property, comparator,"
        " value], …]`): OAS defines no way to write a list inside a list in a query; each inner"
        " list is sent as compact JSON",
        also="type='array'",
    ),
    Explained(
        "*",
        "*",
        "does not match '/^",
        "spec",
        "a pattern written as a JavaScript literal (Sinao's `/^[0-9]{5}$/i`): read as JSON Schema"
        " reads it, the slashes are characters and no value matches; derive takes its inside"
        " (and leaves out one whose flags JSON Schema cannot say)",
        also="$/",
    ),
    Explained(
        "*",
        "*",
        "DeserializeError('form'",
        "limit",
        "openapi-core reads no object query parameter written in form style",
    ),
    Explained(
        "amazonaws.com/*",
        "*",
        "Missing required query parameter",
        "limit",
        "an object query parameter (AWS's `AssociationTarget`) is written exploded into its"
        " properties, as OAS's form style says (`InstanceIds=…`); openapi-core reads no exploded"
        " object, so finds the parameter missing",
    ),
    Explained(
        "amazonaws.com/cloudformation.json",
        "*",
        "Invalid query parameter: Accounts",
        "spec",
        "`DeploymentTargets`, an object written exploded, has a property `Accounts` beside the"
        " operation's own `Accounts` parameter: the query names it twice",
    ),
    Explained(
        "amazonaws.com/tnb.json",
        "*",
        "Invalid header parameter: Content-Type",
        "spec",
        "a `Content-Type` header parameter (OAS: ignored) naming another media type than the"
        " request body the operation declares",
    ),
    Explained(
        "asana.com.json",
        "*",
        "Tried to write read-only property",
        "spec",
        'Asana marks create-only fields readOnly inside an allOf (`workspace`: "*Create-only*…'
        ' can only be specified at creation"); they are offered, as the API takes them',
    ),
    Explained(
        "*",
        "*",
        "error: bad ",
        "limit",
        "openapi-core compiles a spec's pattern with Python's re, which reads no ECMA-262"
        " property escape (\\p{L}) nor a range like [\\w-.]: its check ends in an error (derive"
        " leaves such a pattern out of the tool's schema)",
    ),
    Explained(
        "*",
        "*",
        "error: incomplete escape",
        "limit",
        "as above: an ECMA-262 escape (`\\x` without two hex digits) Python's re refuses",
    ),
    Explained(
        "*",
        "*",
        "RecursionError",
        "limit",
        "openapi-core's validator recurses without end on a schema that refers to itself",
    ),
    Explained(
        "*",
        "*",
        "is not of type",
        "limit",
        "openapi-core does not cast a multipart part's text to its field's declared type: on"
        " the wire every part is text (`1` for an integer, `1.5` for a number)",
        also="form-data; name=",
    ),
    Explained(
        "*",
        "*",
        "first argument must be string or compiled pattern",
        "spec",
        "a `pattern` that is not a string: openapi-core's check fails (derive leaves it out)",
    ),
    Explained(
        "*",
        "*",
        "Content for the following mimetype not found",
        "spec",
        "the spec names its media type with a parameter that has no name (`text/plain;"
        " utf-8`); the request says text/plain",
        also="; utf-8",
    ),
    Explained(
        "*",
        "*",
        "Invalid path parameter",
        "limit",
        "openapi-core checks a path parameter's value as sent: a '/' in it (an AWS ARN) is"
        " escaped, %2F, as RFC 3986 requires within a segment, and checked as those three"
        " characters",
        also="%2F",
    ),
    Explained(
        "*",
        "*",
        "KeyError: 'mutualTLS'",
        "limit",
        "openapi-core 0.23 has no provider for a mutualTLS scheme: it fails any requirement"
        " that lists one, met or not",
    ),
    Explained(
        "*",
        "*",
        "Tried to write read-only property",
        "limit",
        "openapi-core applies readOnly to a parameter's schema (GitHub's alert-number is a"
        " readOnly integer reused as a path parameter); OAS defines readOnly for properties",
        also="Invalid path parameter",
    ),
    Explained(
        "*",
        "*",
        "Tried to write read-only property",
        "limit",
        "as above, for a query parameter's schema",
        also="Invalid query parameter",
    ),
    Explained(
        "dialogporten.json",
        "*",
        "Schemes not valid for any requirement: [['JWTBearerAuth']]",
        "limit",
        "openapi-core compares the Authorization scheme lower-cased against the"
        " declared `scheme: Bearer` as written; RFC 7235 schemes are case-insensitive",
    ),
    Explained(
        "*",
        "*",
        "is not a 'time'",
        "limit",
        "openapi-core's OAS 3.0 `time` format is a time without an offset; JSON Schema's"
        " (RFC 3339 full-time, what tool schemas are checked with) requires one",
    ),
    Explained(
        "airflow-core-v2-fastapi.yaml",
        "*",
        "type='any', schema_errors=(<ValidationError: "
        "\"'judge' is not valid under any of the given schemas",
        "limit",
        "openapi-core does not split a query parameter whose schema is anyOf [array, null]:"
        " `update_mask=judge` (an array of one) is checked as the string itself",
    ),
    Explained(
        "*",
        "*",
        "DeserializeError('deepObject'",
        "limit",
        "openapi-core reads deepObject only into a plain object: Stripe's arrays"
        " (`expand[0]=…`) and anyOf objects (`created[gte]=…`, HERE's `floor[id]`, SoundCloud's"
        " `bpm[from]`) fail before validation",
    ),
    Explained(
        "*",
        "*",
        "Query parameter error: ",
        "limit",
        "openapi-core reads a deepObject into a flat object of strings: an array inside one"
        " (pandascore's `filter[id]`, `range[begin_at]`), which OAS gives no form, is cast as"
        " one string; the runtime sends it indexed (`filter[id][0]=…`), as qs and Rails read it",
        also="type='array')",
    ),
    Explained(
        "stripe*",
        "*",
        "CastError(value=",
        "limit",
        "openapi-core does not read a form body's nested fields (`billing[address][city]=…`,"
        " Stripe's deepObject encoding): the nested value is cast as the whole",
    ),
    Explained(
        "jira.json",
        "judged_add_attachment",
        "{} is not of type 'string'",
        "limit",
        "openapi-core reads a multipart part declared as an array of binary files as {}",
    ),
    Explained(
        "discord.json",
        "judged_create_guild_sticker",
        "Expected a string value, got",
        "limit",
        "openapi-core's multipart reader fails on a part it reads as a list",
    ),
    Explained(
        "discord.json",
        "*",
        "is not one of []",
        "spec",
        "the spec's enum is empty: no value is valid",
    ),
    Explained(
        "jira.json",
        "judged_create_screen_scheme",
        "'defaultScreen' is a required property",
        "spec",
        "required but forbidden (additionalProperties false): no body is valid",
    ),
    Explained(
        "jira.json",
        "judged_add_security_level_members",
        "'securitySchemeLevelMembers' is a required property",
        "spec",
        "required but not declared while additionalProperties is false: no body is valid",
    ),
    Explained(
        "jira.json",
        "*",
        "Query parameter error: properties; CastError(value='{}'",
        "spec",
        "a query array of objects (`StringList` is an object): OAS defines no way to write it",
    ),
    Explained(
        "bigcapital.json",
        "judged_bills_controller_get_bills",
        "Missing required path parameter: id",
        "spec",
        "a path parameter `id` the path `/api/bills` has no place for",
    ),
    Explained(
        "slack*",
        "*",
        "'token'",
        "ours",
        "Slack declares its token as a required `token` query parameter or form field beside"
        " its OAuth scheme; we send it as the scheme says (Authorization: Bearer), which Slack"
        " accepts everywhere, where a token in the query string is refused for apps made since"
        " 2021 (Slack's own changelog); a secret never goes into a URL for a model",
    ),
    Explained(
        "slack*",
        "*",
        "Missing required query parameter: token",
        "ours",
        "as above: the token goes in the Authorization header",
    ),
    Explained(
        "slack*",
        "*",
        "Missing required request body",
        "ours",
        "as above: a form whose one required field is `token` is sent empty",
    ),
    Explained(
        "adyen*[Cc]heckout*",
        "*",
        "is valid under each of {'$ref': '#/components/schemas/BacsDirectDebitDetails'}",
        "spec",
        "paymentMethod's 39 oneOf branches have no discriminator and BacsDirectDebitDetails"
        " requires no field, so a value names its `type` to match one branch only; the"
        " judge's fewest-fields value (an AchDetails without `type`) matches two",
    ),
    Explained(
        "*",
        "*",
        "MediaTypeDeserializeError(mimetype='*/*'",
        "limit",
        "a parameter declared with `content: {'*/*': …}` (telnyx's path ids): openapi-core has"
        " no deserializer for */* and refuses any value; the runtime sends it as text",
    ),
    Explained(
        "*",
        "*",
        "could not be resolved",
        "spec",
        "a discriminator's mapping names a file the document does not carry"
        " (`models/droplet_actions.yml#/droplet_action`) or a schema it does not have: no value"
        " can be checked against it",
    ),
    Explained(
        "atlassian.com/jira.json",
        "*",
        "'defaultScreen' is a required property",
        "spec",
        "ScreenTypes requires `defaultScreen` and allows only `default`, `create`, `edit` and"
        " `view` (additionalProperties: false): no body is valid; derive requires what the"
        " object may have",
    ),
    Explained(
        "atlassian.com/jira.json",
        "*",
        "'securitySchemeLevelMembers' is a required property",
        "spec",
        "SecuritySchemeMembersRequest requires `securitySchemeLevelMembers` and allows only"
        " `members` (additionalProperties: false): no body is valid; derive requires what the"
        " object may have",
    ),
    Explained(
        "digitalocean.com.json",
        "*",
        "Invalid path parameter: ssh_key_identifier",
        "limit",
        "`ssh_key_identifier` is oneOf an integer id or a string fingerprint: openapi-core reads"
        " the path's text `1` as neither (it casts no oneOf), though `1` is the id form",
        also="is not valid under any of the given schemas",
    ),
    Explained(
        "*",
        "*",
        "Invalid path parameter: ",
        "limit",
        "two templates adjacent in one segment (`/blog/{pageName}{mediaTypeExtension}`, sent"
        " `/blog/about.json`): openapi-core gives the first all the text and the second none",
        also="InvalidSchemaValue(value='',",
    ),
    Explained(
        "vtex.local/*",
        "*",
        "ServerNotFound",
        "spec",
        "operation servers that hold the operation's own path (`https://entelperu.{environment}"
        ".com.br/api/…/accessories` for `/api/…/accessories/{productId}`) or a placeholder host"
        " (`http://example.com/.{environment}.com.br`): the judge's copy finds no server for the"
        " URL the spec's letter makes",
    ),
    Explained(
        "intellifi.nl.json",
        "*",
        "Tried to write read-only property",
        "spec",
        "the bodies it takes are schemas marked readOnly whole (`Location`, an item list's ids):"
        " by the letter no request may send them; derive keeps them, as the API needs them",
    ),
    Explained(
        "linode.com.json",
        "*",
        "Tried to write read-only property",
        "spec",
        "a firewall device's body requires `id` and `type`, which the entity it names marks"
        " readOnly: by the letter no body is valid; derive keeps them, as the API needs them",
    ),
    Explained(
        "callfire.com.json",
        "*",
        "Path parameter error: id; CastError(value='1.",
        "limit",
        "`/recordings/{id}.mp3` beside `/recordings/{id}`: openapi-core judges `/recordings/1.mp3`"
        " against the first template it meets, whose id is an integer",
    ),
    Explained(
        "thenounproject.com.json",
        "*",
        "Path parameter error: id; CastError(value='judge'",
        "spec",
        "`/collection/{id}` and `/collection/{slug}` are one template: openapi-core judges a"
        " request by slug against the first, whose id is an integer",
    ),
    Explained(
        "mastercard.com/masterpassqr.json",
        "*",
        "PathNotFound",
        "spec",
        "its path keys are `/send/#env/v1/partners/{partnerId}/…`: everything after `#` is a"
        " fragment, so by the letter every operation is `/send/`; the judge finds no path the"
        " key's template makes",
    ),
    Explained(
        "mastercard.com/masterpassqr.json",
        "*",
        "Missing required path parameter: partnerId",
        "spec",
        "as above: by the letter the operation is `/send/`, whose declared path parameter"
        " `partnerId` has no place in it (the runtime sends the path the key's text means)",
    ),
    Explained(
        "windows.net/graphrbac.json",
        "*",
        "PathNotFound",
        "spec",
        "the next-page operations are `/{tenantID}/{nextLink}#Applications_ListNext` and the"
        " like, told apart by a fragment alone: the judge's copy cannot tell which one a request"
        " is, and openapi-core matches none",
    ),
    Explained(
        "probely.com.json",
        "*",
        "Tried to write read-only property",
        "spec",
        "the ids a request names (`target_ids`, a body that is a list of ids) are the shared `id`"
        " schema, which is readOnly: by the letter no request may name a target; derive keeps"
        " them, as the API needs them",
    ),
    Explained(
        "shipengine.com.json",
        "*",
        "Additional properties are not allowed",
        "spec",
        "its request bodies close the outer schema (`additionalProperties: false`) while every"
        " property comes from an allOf part: under JSON Schema no body with a property is valid;"
        " derive merges the parts, as ShipEngine means them",
    ),
    Explained(
        "azure.com/*[Ll]ogic*",
        "*",
        "Additional properties are not allowed",
        "spec",
        "its bodies are allOf parts each closed with `additionalProperties: false` (a resource"
        " beside its properties, KeyVaultReference beside ResourceReference): under JSON Schema"
        " each part refuses the others' fields, so no body with the fields Azure means is valid",
    ),
    Explained(
        "azure.com/containerregistry.json",
        "*",
        "Schemes not valid for any requirement",
        "spec",
        "its requirement is registry_auth (HTTP basic) AND registry_oauth2 (an apiKey named"
        " Authorization): both are the one Authorization header, so no request carries both;"
        " the call sends one",
    ),
    Explained(
        "conjur.local.json",
        "*",
        "Schemes not valid for any requirement",
        "spec",
        "as azure containerregistry: basicAuth AND conjurAuth (an apiKey named Authorization),"
        " both the one Authorization header",
    ),
    Explained(
        "*",
        "*",
        "is not a 'byte'",
        "limit",
        "a raw body (`application/octet-stream`, Xero's attachments) whose schema is a string of"
        " `format: byte` (base64 text): the runtime sends the file's bytes, as the API takes"
        " them; openapi-core holds the bytes themselves to base64 text",
        also="Request body validation error",
    ),
    Explained(
        "xero.com/*",
        "*",
        "Invalid path parameter: ",
        "spec",
        "two templates on one path (`…/Attachments/{FileName}` and `…/Attachments/{AttachmentID}`,"
        " `/Contacts/{ContactID}` and `/Contacts/{ContactNumber}`): openapi-core judges a request"
        " by name against the first, whose id is a uuid",
        also="is not a 'uuid'",
    ),
    Explained(
        "here.com/*",
        "*",
        "[['signedRequest']]",
        "ours",
        "HERE's token exchange is an OAuth 1.0 signed request (`signedRequest`), which skillpress"
        " does not make: skill.json counts it `operations_unservable`; its other operations take"
        " the bearer token",
    ),
    Explained(
        "pay1.de/*",
        "*",
        "SecurityNotFound",
        "ours",
        "each operation's one scheme is an HMAC signature of its values (`payone-hmac-sha256`),"
        " which skillpress does not make: skill.json counts them `operations_unservable`, and a"
        " call goes unsigned (the API refuses it, and says why)",
    ),
    Explained(
        "*",
        "*",
        "b'judge' is not of type 'string'",
        "limit",
        "a raw body (`application/octet-stream`, Conjur's secret) whose schema is a string with"
        " no `format: binary`: openapi-core holds the bytes themselves to `type: string`",
        also="Request body validation error",
    ),
    Explained(
        "codat.io/*",
        "*",
        "is not of type 'null'",
        "spec",
        "Bill's `currency` is allOf a currency code (a string) and `{type: null}`: only null"
        " satisfies both, and the API's own examples send a code; derive keeps the string",
    ),
    Explained(
        "*",
        "*",
        "header parameter: Content-type",
        "limit",
        "as for Content-Type: a header parameter named Content-Type in any case (Docker's"
        " `Content-type: application/x-tar`) SHALL be ignored; the body's media type says it",
    ),
    Explained(
        "cpy.re/peertube.json",
        "*",
        "Missing required header parameter: Content-Length",
        "spec",
        "a required `Content-Length` header parameter on a request with no body: the length is"
        " the transport's to write (none for an empty DELETE), never a model's argument",
    ),
    Explained(
        "azure.com/frontdoor-networkexperiment.json",
        "*",
        "Tried to write read-only property",
        "spec",
        "Profile's allOf part (Resource) marks `name` readOnly while Profile itself declares a"
        ' writable `name` ("The name of the Profile"): under allOf both hold; derive keeps the'
        " profile's own word",
    ),
    Explained(
        "e-conomic.com.json",
        "*",
        "'canApprove' is a required property",
        "spec",
        "Employee requires `canApprove` and `canInvoice`, which it does not declare, while"
        " additionalProperties is false: no body is valid",
    ),
    Explained(
        "gambitcomm.local/mimic.json",
        "*",
        "type='array')",
        "limit",
        "a path parameter that is an array (simple style, `a,b`): openapi-core casts no array"
        " from a path segment, of one value or more",
        also="Path parameter error",
    ),
    Explained(
        "*",
        "*",
        "Failed to cast value to boolean type: b'",
        "limit",
        "openapi-core does not cast a multipart part's text (`true`) to its field's boolean",
    ),
    Explained(
        "*",
        "*",
        "is not valid under any of the given schemas",
        "limit",
        "openapi-core does not cast a multipart part's text to a oneOf of its field's types"
        " (Telegram's chat_id, an integer or a string: every part is bytes to it)",
        also="b'",
    ),
    Explained(
        "hydramovies.com.json",
        "*",
        "ServerNotFound",
        "spec",
        "its path keys hold a whole URL's query (`/?source=http://hydramovies.com/…csv&imdb_id="
        "{imdb_id}`): the judge's copy finds no server for the URL the key's letter makes",
    ),
    Explained(
        "*",
        "*",
        "Valid mimetypes: ['application/JSON']",
        "limit",
        "the spec names its media type `application/JSON`; media types are case-insensitive"
        " (RFC 6838), openapi-core compares them as written",
    ),
    Explained(
        "microcks.local.json",
        "*",
        "Missing required query parameter: queryMap",
        "limit",
        "an object query parameter (`queryMap`) is written exploded into its properties, as"
        " OAS's form style says; openapi-core reads no exploded object",
    ),
    Explained(
        "*",
        "*",
        "IndexError: Replacement index 0 out of range",
        "limit",
        "openapi-core's path parser fails on two templates adjacent in one segment"
        " (NeoWs' `/projects/{id}{format}`) before judging",
    ),
    Explained(
        "pandorabots.com.json",
        "*",
        "Failed to deserialize value with application/xml",
        "limit",
        "a text body under application/xml whose schema is a plain string: the judge's value"
        " (`judge`) is no XML document, which openapi-core parses first; a model writes the file",
    ),
    Explained(
        "salesloft.com.json",
        "*",
        "Failed to cast value to object type: {}",
        "limit",
        "openapi-core does not read an object field of a form body (`custom_fields`), which OAS"
        " encodes as the runtime sends it",
    ),
    Explained(
        "seldon.local/wrapper.json",
        "*",
        "Missing required query parameter",
        "limit",
        "as microcks: an object query parameter (`body`, a SeldonMessageList) written exploded"
        " into its properties (`seldonMessages=…`); openapi-core reads no exploded object",
    ),
    Explained(
        "sinao.app.json",
        "*",
        "Missing required query parameter: movements",
        "limit",
        "as seldon: `movements`, a required object query parameter, written exploded into its"
        " properties as OAS's form style says; openapi-core reads no exploded object",
    ),
    Explained(
        "box.com.json",
        "*",
        "'grant_type' is a required property",
        "limit",
        "PostOAuth2Revoke requires `grant_type`, which it does not declare: derive keeps the"
        " name (sent, `grant_type=…`); openapi-core reads only a form's declared fields, so"
        " never finds it",
    ),
    Explained(
        "clever-cloud.com.json",
        "*",
        "PathNotFound",
        "spec",
        "its path key `//openapi` has an empty segment: the runtime sends one slash"
        " (`/v2/openapi`), the judge's copy finds no key for it",
    ),
    Explained(
        "cpy.re/peertube.json",
        "*",
        "'channelId' is a required property",
        "limit",
        "a multipart body whose schema is an allOf (VideoUploadRequestLegacy): openapi-core"
        " reads only the parts one allOf member declares, so finds the others' missing",
    ),
    Explained(
        "github.com.json",
        "*",
        "'ConferenceName' is a required property",
        "limit",
        "as Box's: RecordStartParameters requires `ConferenceName`, which it does not declare;"
        " derive keeps the name (sent); openapi-core reads only a form's declared fields",
    ),
    Explained(
        "salesloft.com.json",
        "*",
        "'recording' is a required property",
        "limit",
        "a required object field of a form (`recording`), written exploded into its fields as"
        " OAS says: the judge's value `{}` writes no pair, and openapi-core reads no object from"
        " a form",
    ),
    Explained(
        "influxdata.com.json",
        "*",
        "ServerNotFound",
        "spec",
        'a path-level server `""` (`/health`, `/ready`): relative to where the document is'
        " served, which a converted document does not say; derive keeps the API's base URL",
    ),
    Explained(
        "json2video.com.json",
        "*",
        "Additional properties are not allowed",
        "spec",
        "its elements are allOf parts each closed with `additionalProperties: false` (a video's"
        " `type` and `src` beside BaseElement's fields): each part refuses the others' fields,"
        " so no element with a field is valid",
    ),
    Explained(
        "rapidapi.com/idealspot-geodata.json",
        "*",
        "KeyError: 'insight_id'",
        "spec",
        "its template is `{insight_id:}`, a name with a colon in it: openapi-core's path parser"
        " fails on it before judging",
    ),
    Explained(
        "rapidapi.com/dynamicdocs.json",
        "*",
        "Schemes not valid for any requirement",
        "spec",
        "its apiKey schemes name headers that cannot be (`RapidAPI.com API Key`, with spaces):"
        " skill.json counts the operation `operations_unservable`; the call goes without it",
    ),
    Explained(
        "azure.com/datafactory.json",
        "*",
        "is not of type 'object'",
        "spec",
        "Factory says `additionalProperties: {type: object}` beside its allOf part Resource:"
        " under allOf every field Factory does not declare itself (Resource's `location`, a"
        " string) must be an object, which no factory body is",
    ),
    Explained(
        "windows.net/graphrbac.json",
        "*",
        "is not of type 'object'",
        "spec",
        "UserBase, an allOf part of the user bodies, says `additionalProperties: {type: object}`:"
        " under allOf every field it does not declare (`accountEnabled`, `displayName`) must be"
        " an object, which no user body is",
    ),
    Explained(
        "mist.com.json",
        "*",
        "\"'file {}' is a required property\"",
        "spec",
        "its image uploads require a field named `file {}`, which no part declares (the"
        " declared file part is `file`)",
    ),
    Explained(
        "zuora.com.json",
        "*",
        "is not of type 'string'",
        "spec",
        "Account is allOf its fields and DataAccessControlField, whose `additionalProperties:"
        " {type: string}` holds every field the latter does not declare (`billToContact`, an"
        " object) to be a string: no account with its contacts is valid",
    ),
    Explained(
        "gerermesaffaires.com.json",
        "*",
        "is valid under each of",
        "spec",
        "a oneOf of document kinds whose branches admit the same values (each allows the"
        " others' fields; `Type` tells them apart only in words): a valid document matches more"
        " than one",
    ),
    Explained(
        "mist.com.json",
        "*",
        "['judge'] is not of type 'object'",
        "limit",
        "`tunterm_dhcpd_config` declares `servers` (a list) and `additionalProperties` objects:"
        " openapi-core holds the declared `servers` to additionalProperties too, which JSON"
        " Schema applies only to undeclared keys",
    ),
    Explained(
        "storecove.com.json",
        "*",
        "is not one of ['AD', 'AE'",
        "ours",
        "a field deep in a type cut to fit the tool budget keeps its type, its bounds and an"
        " enum of at most 20 values, and the fields its type requires three levels down: the"
        " ISO country list (250 codes) and a routing's `identifiers` are in the operation's file,"
        " which the model reads",
    ),
    Explained(
        "xero.com/xero_accounting.json",
        "*",
        "is not one of ['AED', 'AFN'",
        "ours",
        "as Storecove's: a cut type's field keeps an enum of at most 20 values; the ISO"
        " currency list (160 codes) is in the operation's file",
    ),
    Explained(
        "intellifi.nl.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "just-eat.co.uk.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "mailscript.com.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "portfoliooptimizer.io.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "shipengine.com.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "zoom.us.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "ably.io/platform.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "influxdata.com.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "mist.com.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "linqr.app.json",
        "*",
        "Additional properties are not allowed",
        "spec",
        "ContactData closes its properties (`additionalProperties: false`) while every one is in"
        " its anyOf branches (VCard, MeCard): under JSON Schema no contact with a field is"
        " valid; derive leaves it open, as linqr means it",
    ),
    Explained(
        "maif.local/otoroshi.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "1password.com/events.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "graphhopper.com.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "nexmo.com/dispatch.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "rudder.example.local.json",
        "*",
        "is valid under each of",
        "spec",
        OPEN_ONE_OF,
    ),
    Explained(
        "here.com/tracking.json",
        "*",
        "Missing required query parameter: apiKey",
        "ours",
        'a query parameter named and described as an API key (`apiKey`, "API Key") is a secret:'
        " never a model's argument, and not the skill's credential (HERE's bearer token), so it"
        " is not sent; the operation's file says so",
    ),
    Explained(
        "vercel.com.json",
        "*",
        "TypeError: Expected a string value, got <class 'list'>",
        "limit",
        "openapi-core fails on a query parameter whose `type` is a list (`[string, number,"
        " null]`) before judging",
    ),
    Explained(
        "codat.io/*",
        "*",
        "Unknown type 'description'",
        "spec",
        "Item's `itemType` writes its schema under a `type` key (`{type: {type: string, enum:"
        " …}}`), which no JSON Schema validator can read",
    ),
    # tools no value can be built for, because the spec allows none (`NOT_BUILT`)
    Explained(
        "sendgrid.com.json",
        "*",
        "put_marketing_singlesends_id_schedule",
        "spec",
        "`send_at` is `format: date-time` with `enum: [now]`: its one value is no date-time",
        also=NOT_BUILT,
    ),
    Explained(
        "linode.com.json",
        "*",
        "create_firewalls",
        "spec",
        "the label's pattern `^[a-zA-Z]((?!--|__|..)[a-zA-Z0-9-_.])+$` (an unescaped `..` in the"
        " lookahead) admits no label of its minLength 3",
        also=NOT_BUILT,
    ),
    Explained(
        "zuora.com.json",
        "*",
        "delete_data_query_job",
        "spec",
        "`job-id` is `format: uuid` of minLength 64: a uuid is 36 characters",
        also=NOT_BUILT,
    ),
)


def _explained(spec: str, message: str) -> Explained | None:
    """The explanation of a finding, the most particular first: one naming the spec (then the
    tool) before one for every spec."""
    tool = message.split(" ", 1)[0]
    message = message.replace("\\'", "'")  # a value holding quotes: openapi-core escapes them
    found = [
        e
        for e in EXPLAINED
        if fnmatch.fnmatchcase(spec, e.spec)
        and e.tool in ("*", tool)
        and e.says in message
        and e.also in message
    ]
    return min(found, key=lambda e: ("*" in e.spec, e.tool == "*"), default=_enum_misfit(message))


ENUM_OF_SINGLES = Explained(
    "*",
    "*",
    "is not one of",
    "spec",
    "an enum of single values on a list (`type: array, enum: [live, promotions]`): no list"
    " equals one of them; derive offers them as the items' values, what the spec means",
)
ENUM_OF_ANOTHER_TYPE = Explained(
    "*",
    "*",
    "is not one of",
    "spec",
    "an enum whose values are of another type than its schema's (`type: string`,"
    ' `enum: [true, false]` or `[43, 169]`, `type: integer` with `["0 (Private)"]`): no value of'
    " the type equals one; derive offers them as values of the type, what the spec means",
)
ONE_OF_FORMATS = Explained(
    "*",
    "*",
    "is valid under each of",
    "spec",
    "a oneOf whose branches differ only by a format (`uri` or `byte`, Shutterstock's"
    " `asset-id` or `asset-upload-id`): a validator holds no value to a format it does not"
    " check, so every value is valid under each and none under oneOf; derive offers anyOf",
)
_ERROR = re.compile(r"<ValidationError: [\"'](.*?)[\"']>")
_NOT_ONE_OF = re.compile(r"(.+) is not one of (\[.*\])")
_UNDER_EACH = re.compile(r".+ is valid under each of (.+)")
_BARE = frozenset({"type", "format", "description", "title"})


def _formats_alone(error: str) -> bool:
    """The error is a value valid under several oneOf branches that are each a type and a
    format, of one type."""
    m = _UNDER_EACH.fullmatch(error)
    if not m:
        return False
    try:
        branches = ast.literal_eval(f"[{m[1]}]")
    except (ValueError, SyntaxError):
        return False
    return (
        all(isinstance(b, dict) and set(b) <= _BARE for b in branches)
        and len({json.dumps(b.get("type")) for b in branches}) == 1
    )


def _same_but_type(listed: Any, value: Any) -> bool:
    """`listed` (an enum's value) is `value` written as another type: "true" for true, 43 for
    "43", or an integer's code with its name (visualstudio's `"1 (Public)"` for 1)."""
    if json.dumps(listed).strip('"') == json.dumps(value).strip('"'):
        return True
    if isinstance(value, float) and value.is_integer() and listed == str(int(value)):
        return True  # openapi-core casts a number's text `2` to 2.0 (EPA's `p_cs`: "2")
    if isinstance(listed, list) and listed == [value]:
        return True  # an enum of lists of one (BC's job posting: `[[1], [2]]` on an integer)
    return isinstance(value, int) and isinstance(listed, str) and listed.startswith(f"{value} (")


def _none_of_its_type(value: Any, enum: list[Any]) -> bool:
    """A number against an enum of names only (Google's `pageSize`, `type: integer` with
    `enum: [BASIC, FULL]`; Azure's `keyType`): no value of the type is one of them."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not enum:
        return False
    return all(isinstance(v, str) and not re.fullmatch(r"-?\d+(\.\d+)?", v) for v in enum)


def _enum_misfit(message: str) -> Explained | None:
    """The explanation when every schema error openapi-core names is a value against an enum
    the spec wrote of another type (or for a list, of single values), or against a oneOf of
    formats alone: the spec's mistake."""
    errors = _ERROR.findall(message)
    kinds = set()
    for error in errors:
        if _formats_alone(error):
            kinds.add(ONE_OF_FORMATS)
            continue
        m = _NOT_ONE_OF.fullmatch(error)
        if not m:
            return None
        try:
            value, enum = ast.literal_eval(m[1]), ast.literal_eval(m[2])
        except (ValueError, SyntaxError):
            return None
        if not isinstance(enum, list):
            return None
        if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in enum):
            kinds.add(ENUM_OF_SINGLES)
        elif any(_same_but_type(v, value) for v in enum) or _none_of_its_type(value, enum):
            kinds.add(ENUM_OF_ANOTHER_TYPE)
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


@dataclass(frozen=True)
class _Alias:
    """A path key with a query or a fragment in it (`/tags/{arn}#tagKeys`, AWS's
    `/#X-Amz-Target=Service.Action`, `/phone-numbers/{id}#operation=restore`: several operations
    on one path, told apart by a query value or a header), which openapi-core matches as a
    template and so never (or as another key): the judge's copy of the document has it as its
    own path, between two `marker` segments, and a request that names what the key names is judged there."""

    pattern: re.Pattern[str]
    methods: frozenset[str]
    needs: tuple[tuple[str, str | None], ...]  # (name, value) pairs, or a bare name
    marker: str
    key: str = ""  # the path key as the spec writes it
    # a key another key's template also matches (`/conversations/{id}/offer` beside
    # `/conversations/{conversation_id}/offer`, `/pulls/{index}.{diff_type}` beside
    # `/pulls/{index}`): openapi-core judges by the first it meets; its copy is used only for a
    # request of a tool derived from it
    own_only: bool = False


_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _read_only_not_required(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with every readOnly property out of its schema's `required`: OAS 3.0 says
    such a requirement holds for a response only ("required will take effect on the response
    only"), and openapi-core holds a request to it too, so a body that rightly leaves out a
    server-made `id` (apideck) would be refused."""
    schemas = (doc.get("components") or {}).get("schemas") or {}

    def read_only(prop: Any) -> bool:
        if isinstance(prop, dict) and isinstance(prop.get("$ref"), str):
            target = (
                schemas.get(prop["$ref"].rsplit("/", 1)[-1])
                if "#/components/schemas/" in prop["$ref"]
                else None
            )
            return bool(prop.get("readOnly")) or (
                isinstance(target, dict) and target.get("readOnly") is True
            )
        return isinstance(prop, dict) and prop.get("readOnly") is True

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {k: walk(v) for k, v in value.items()}
        props, required = value.get("properties"), value.get("required")
        if isinstance(props, dict) and isinstance(required, list):
            kept = [r for r in required if not read_only(props.get(r))]
            if kept != required:
                if kept:
                    out["required"] = kept
                else:
                    out.pop("required")
        return out

    return walk(doc)  # type: ignore[no-any-return]


def _path_to_query(item: dict[str, Any], moved: dict[str, str], doc: dict[str, Any]) -> Any:
    """A path item whose parameters named in `moved` (declared `in: path`, templated in the key's
    query) are query parameters of the query's names: what the runtime sends."""

    from skillpress.derive.refs import Resolver
    from skillpress.format.errors import SpecRefused

    resolver = Resolver(doc)

    def param(p: Any) -> Any:
        try:
            p = resolver.deref(p, "a path parameter")
        except SpecRefused:
            pass  # left as written: openapi-core says what it makes of it
        if isinstance(p, dict) and p.get("in") == "path" and p.get("name") in moved:
            return {**p, "in": "query", "name": moved[p["name"]]}
        return p

    def params(holder: Any) -> Any:
        if not isinstance(holder, dict) or not isinstance(holder.get("parameters"), list):
            return holder
        return {**holder, "parameters": [param(p) for p in holder["parameters"]]}

    return {k: params(v) if k in _METHODS else v for k, v in params(item).items()}


def _template(base: str) -> str:
    return re.sub(r"\\\{.*?\\\}", "[^/]+", re.escape(base))


def _ambiguous(paths: dict[str, Any]) -> set[str]:
    """The plain keys (no query, no fragment) some other key may match the same request as, for
    a method both have: as many segments, each pair of segments alike or one a template
    (`/sites/{site_id}/{zone_type}/count` and `/sites/{site_id}/zones/{zone_id}`)."""
    buckets: dict[int, list[tuple[str, tuple[str, ...], frozenset[str]]]] = {}
    for key, item in paths.items():
        if not isinstance(item, dict) or re.search("[#?]", str(key)):
            continue
        methods = frozenset(m for m in item if m in _METHODS)
        segments = tuple(str(key).rstrip("/").split("/"))
        buckets.setdefault(len(segments), []).append((str(key), segments, methods))
    found: set[str] = set()
    for bucket in buckets.values():
        for n, (key, segments, methods) in enumerate(bucket):
            for other, theirs, also in bucket[n + 1 :]:
                if methods & also and all(
                    a == b or "{" in a or "{" in b for a, b in zip(segments, theirs, strict=True)
                ):
                    found |= {key, other}
    return found


def _pointed_into(text: str, key: str) -> bool:
    """Whether a `$ref` of the document (`text`, as JSON) points into the path item `key`."""
    return "#/paths/" + key.replace("~", "~0").replace("/", "~1") in text


def _aliased(doc: dict[str, Any]) -> tuple[dict[str, Any], tuple[_Alias, ...]]:
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    out: dict[str, Any] = {}
    aliases: list[_Alias] = []
    ambiguous = _ambiguous(paths)
    text: str | None = None  # the document as JSON, made once when a key needs it
    for key, item in paths.items():
        found = re.match(r"^([^#?]*)[#?](.*)$", str(key))
        if found is None and key in ambiguous:
            out[key] = item
            marker = f"__judge{len(aliases)}"
            out[f"/{marker}{str(key).rstrip('/')}/{marker}"] = item
            methods = frozenset(m.upper() for m in item if m in _METHODS)
            pattern = re.compile(f"^{_template(str(key).rstrip('/'))}/?$")
            aliases.append(_Alias(pattern, methods, (), marker, str(key), own_only=True))
            continue
        if found is None or not isinstance(item, dict):
            out[key] = item
            continue
        text = text if text is not None else json.dumps(doc)
        if _pointed_into(text, str(key)):  # kept for a `$ref` into it (`#/paths/~1request?view=…`)
            out[key] = item  # (else not: openapi-core would match `/send/#env/…` as `/send/`)
        base, tail = found.group(1).rstrip("/"), found.group(2)
        marker = f"__judge{len(aliases)}"
        pairs = [part.partition("=") for part in tail.split("&") if part]
        # `lat={lat}`: a query parameter the key declares `in: path` (weatherbit): the request
        # names it with any value, and the judge's copy reads it from the query
        moved = {
            value[1:-1]: name
            for name, eq, value in pairs
            if eq and re.fullmatch(r"\{[^{}]+\}", value)
        }
        out[f"/{marker}{base}/{marker}"] = _path_to_query(item, moved, doc) if moved else item
        needs = tuple(
            (name, value if eq and value[1:-1] not in moved else None) for name, eq, value in pairs
        )
        template = _template(base)
        methods = frozenset(m.upper() for m in item if m in _METHODS)
        aliases.append(_Alias(re.compile(f"^{template}/?$"), methods, needs, marker, str(key)))
    return {**doc, "paths": out}, tuple(aliases)


def _own_keys(doc: dict[str, Any], operations: Any) -> dict[str, str]:
    """Each operation's path key as the spec writes it (fragment included), by its name."""
    by_id = {
        str(op.get("operationId")): str(key)
        for key, item in (doc.get("paths") or {}).items()
        if isinstance(item, dict)
        for method, op in item.items()
        if method in _METHODS and isinstance(op, dict) and op.get("operationId")
    }
    # an operation with no id: its method and path, where one key alone has them
    by_line: dict[tuple[str, str], list[str]] = {}
    for key, item in (doc.get("paths") or {}).items():
        for method in item if isinstance(item, dict) else ():
            if method in _METHODS:
                by_line.setdefault((method.upper(), re.split("[#?]", str(key))[0]), []).append(key)
    out: dict[str, str] = {}
    for o in operations:
        if not isinstance(o, dict):
            continue
        line = by_line.get((str(o.get("method")), str(o.get("path"))), [])
        if str(o.get("operation_id")) in by_id:
            out[str(o.get("name"))] = by_id[str(o.get("operation_id"))]
        elif len(line) == 1:
            out[str(o.get("name"))] = str(line[0])
    return out


def _named(alias: _Alias) -> int:
    """How much of a request a key names: a value (`operation=search`) more than a name alone
    (`#x-amz-chime-bearer`, a header every call of the API sends)."""
    return sum(2 if value is not None else 1 for _, value in alias.needs)


def _alias_path(
    path: str,
    method: str,
    query: list[tuple[str, str]],
    headers: Mapping[str, str],
    prefixes: tuple[str, ...],
    aliases: tuple[_Alias, ...],
    own_key: str = "",
) -> str:
    """`path` moved to the judge's copy of the key the request names, if one does; a key told
    apart by a fragment alone (`/verify#overload=person`, Box's `…/schema#add`), which no request
    names, is the one the tool was derived from (`own_key`)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for prefix in prefixes:
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        best: _Alias | None = None
        for alias in aliases:
            if method not in alias.methods or not alias.pattern.match(rel):
                continue
            if own_key and alias.key == own_key and ("#" in own_key or alias.own_only):
                best = alias
                break
            if alias.own_only:
                continue
            met = all(
                any(k == name and (value is None or v == value) for k, v in query)
                or (name.lower() in lowered and value in (None, lowered[name.lower()]))
                for name, value in alias.needs
            )
            if met and (best is None or _named(alias) > _named(best)):
                best = alias
        if best is not None:
            # first and last: no other key's template (nor a server's) takes it for a value
            return f"{prefix}/{best.marker}{rel.rstrip('/')}/{best.marker}"
    return path


def _request(
    api_url: str,
    seen: Any,
    prefixes: tuple[str, ...] = ("",),
    aliases: tuple[_Alias, ...] = (),
    own_key: str = "",
) -> MockRequest:
    parts = urlsplit(seen.path)
    # openapi-core matches the path as sent, without decoding a segment's escapes (`sha256%3A…`
    # for `sha256:…`, the same segment by RFC 3986): decoded here, all but an escaped '/'
    path = "%2F".join(unquote(piece) for piece in re.split("%2[Ff]", parts.path))
    headers = dict(seen.headers)
    args = parse_qsl(parts.query, keep_blank_values=True)
    if aliases:
        path = _alias_path(path, seen.method, args, headers, prefixes, aliases, own_key)
    cookie = SimpleCookie()
    cookie.load(headers.get("Cookie", ""))
    return MockRequest(
        api_url,
        seen.method,
        path,
        args=args,  # type: ignore[arg-type]
        headers=headers,
        cookies={k: m.value for k, m in cookie.items()},
        data=seen.body,
        content_type=headers.get("Content-Type", ""),
    )


def _own_server(doc: dict[str, Any]) -> str:
    """The document's first server, absolute (a placeholder host such as Jira's
    `your-domain.atlassian.net` too: the judge moves it), or a stand-in for a relative one."""
    if "swagger" in doc:
        return f"https://{doc.get('host') or 'judge.invalid'}{doc.get('basePath') or ''}"
    own, raw = server_from_list(doc.get("servers"), None)
    if own is None and raw and not relative_server(doc.get("servers")):
        variables = doc["servers"][0].get("variables") or {}
        own = re.sub(
            r"\{([^{}]+)\}",
            lambda m: str((variables.get(m.group(1)) or {}).get("default", m.group(0))),
            raw,
        ).rstrip("/")
    return own or ("https://judge.invalid/" + str(raw or "").lstrip("/"))


# the media types openapi-core reads itself; any other a body is declared under (`*/*`,
# Kubernetes' `application/merge-patch+json`, Blockfrost's `application/cbor`) it hands on as
# bytes, which no schema admits: the judge reads those as JSON, YAML or text
_READ = {"application/json", "application/x-www-form-urlencoded", "multipart/form-data"}
_READ |= {"text/plain", "text/html", "application/octet-stream", "application/xml"}


def _unread_media(doc: dict[str, Any]) -> set[str]:
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            body = value.get("requestBody")
            if isinstance(body, dict) and isinstance(body.get("content"), dict):
                found.update(str(m).split(";")[0].strip() for m in body["content"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(doc.get("paths"))
    for body in ((doc.get("components") or {}).get("requestBodies") or {}).values():
        walk({"requestBody": body})
    return {m for m in found if m not in _READ}


def _loads(value: bytes) -> Any:
    text = value.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def judge_base(data: bytes, api: HostileApi) -> str:
    """The base URL a spec is derived with to be judged: its own server's path on `api`."""
    return api.url + urlsplit(_own_server(load_document(data))).path.rstrip("/")


def judge(data: bytes, name: str, tmp: Path, api: HostileApi, slug: str = "judged") -> Verdict:
    """Every tool of the spec `data` (its file named `name`) called once with valid arguments,
    each request judged."""
    files = derive_package(data, DeriveOptions(slug=slug, base_url=judge_base(data, api))).files
    return judge_files(files, data, name, tmp, api, slug)


def judge_files(
    files: Mapping[str, bytes],
    data: bytes,
    name: str,
    tmp: Path,
    api: HostileApi,
    slug: str,
    judged_at_most: int | None = None,
) -> Verdict:
    """Every tool of `files` (derived from the spec `data`, with `judge_base`) called once with
    valid arguments, each request judged against the spec (`judged_at_most`: that many, spread
    evenly over the tools, the rest called but not judged: openapi-core finds a request's path
    by trying every path's pattern, so Microsoft Graph's 11,000 would take hours)."""
    doc = load_document(data)
    own_url = _own_server(doc)
    write_package_dir(files, tmp / "skills" / slug)
    host = SkillHost(
        tmp / "skills", limits=CallLimits(retries=0, timeout=20), gatekeeper=lambda check: None
    )
    skill = host.bound()[0]
    auth = json.loads(files["skill.json"]).get("auth") or {}
    # a scheme's own variable is a credential even when named like a client's secret (Square's
    # oauth2ClientSecret, an apiKey: SQUAREUP_COM_OAUTH2_CLIENT_SECRET)
    own = [*(auth.get("also") or ()), *(auth.get("others") or ())]
    environ = _Credentials(frozenset(str(c.get("env")) for c in own if c.get("env")))
    oracle = None
    prefixes: tuple[str, ...] = ("",)
    aliases: tuple[_Alias, ...] = ()
    verdict = Verdict(judged="swagger" not in doc)
    if verdict.judged:
        moved = _local_servers(doc, host_of(own_url), api.url)
        if not moved.get("servers"):  # none named: derive was given the base URL alone
            moved["servers"] = [{"url": api.url}]
        moved, aliases = _aliased(_read_only_not_required(moved))
        prefixes = tuple(
            sorted(
                {urlsplit(str(v.get("url", ""))).path.rstrip("/") for v in moved["servers"]} | {""},
                key=len,
                reverse=True,
            )
        )
        try:
            oracle = OpenAPI.from_dict(
                moved,
                config=Config(
                    spec_validator_cls=None,
                    extra_media_type_deserializers={m: _loads for m in _unread_media(doc)},
                ),
            )
        except Exception as e:  # noqa: BLE001 - the judge cannot read the spec: not ours
            verdict.judged = False
            verdict.unjudged = f"openapi-core cannot read the spec: {type(e).__name__}: {e}"[:300]
    local = host_of(api.url)
    keys = _own_keys(doc, json.loads(files["skill.json"]).get("operations") or ())
    tools = skill.tools
    every = max(1, -(-len(tools) // judged_at_most)) if judged_at_most else 1
    for n, tool in enumerate(tools):
        args = valid_arguments(tool.offered_schema)
        if args is None:
            known = _explained(name, f"{tool.name} {NOT_BUILT}")
            if known is None:
                verdict.ungenerated.append(tool.name)
            else:
                verdict.explained.setdefault(known, []).append(tool.name)
            continue
        try:
            prepared = host.prepare(tool.name, tool.from_model(args))
        except CallRefused as e:
            verdict.refused.append(f"{tool.name} {json.dumps(args)[:300]}: {e}")
            continue
        if host_of(prepared.url) != local:
            verdict.elsewhere.append(f"{tool.name} → {host_of(prepared.url)}")
            continue
        before = len(api.seen)
        try:
            host.call(tool.name, args, environ=environ)
        except Exception as e:  # noqa: BLE001 - every failure is a finding, named
            verdict.failed.append(f"{tool.name}: {type(e).__name__}: {e}")
            continue
        verdict.called += 1
        if len(api.seen) == before:
            verdict.failed.append(f"{tool.name}: answered, but nothing reached the server")
            continue
        seen = api.seen[before]
        if oracle is None or n % every:
            continue
        verdict.judged_requests += 1
        try:
            request = _request(api.url, seen, prefixes, aliases, keys.get(tool.operation, ""))
            oracle.validate_request(request)
        except Exception as e:  # noqa: BLE001 - openapi-core's verdict, whatever its class
            said = f"{type(e).__name__}: {e}; {getattr(e, '__cause__', None)!r}"
            message = f"{tool.name} {seen.method} {seen.path[:200]} {seen.body[:200]!r}: {said}"
            known = _explained(name, message)
            if known is not None:
                verdict.explained.setdefault(known, []).append(tool.name)
                continue
            verdict.violations.append(message[:1500])
    return verdict
