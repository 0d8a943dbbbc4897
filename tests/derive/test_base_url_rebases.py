"""A base URL rebases the API's own server and keeps per-operation servers on other hosts
(#42.12): imported with `--base-url https://api.github.com` (what the console's preview fills
in), `repos_upload_release_asset` moved from uploads.github.com to api.github.com. A base URL
equal to the spec's server changes nothing; another one moves the API's own host only."""

from __future__ import annotations

from typing import Any

import yaml

from skillpress.derive.package import derive_package
from skillpress.derive.package_types import DeriveOptions
from skillpress.format.frontmatter import split_frontmatter

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Hub", "version": "1"},
    "servers": [{"url": "https://api.hub.test"}],
    "paths": {
        "/repos": {
            "get": {"operationId": "listRepos", "responses": {"200": {"description": "ok"}}}
        },
        "/assets": {
            "post": {
                "operationId": "uploadAsset",
                "servers": [{"url": "https://uploads.hub.test"}],
                "responses": {"201": {"description": "ok"}},
            }
        },
        "/beta/things": {
            "get": {
                "operationId": "listThings",
                "servers": [{"url": "https://api.hub.test/preview"}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/local": {
            "get": {
                "operationId": "listLocal",
                "servers": [{"url": "/v2"}],
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
}


def _urls(base_url: str | None) -> tuple[dict[str, str], list[str]]:
    package = derive_package(yaml.safe_dump(SPEC).encode(), DeriveOptions(base_url=base_url))
    urls = {}
    for name in ("list_repos", "upload_asset", "list_things", "list_local"):
        text = package.files[f"{name}.md"].decode()
        urls[name] = split_frontmatter(f"{name}.md", text).frontmatter["operation"]["url"]
    return urls, list(package.manifest.hosts)


def test_a_base_url_equal_to_the_specs_own_changes_nothing() -> None:
    assert _urls("https://api.hub.test") == _urls(None)
    urls, hosts = _urls(None)
    assert urls["upload_asset"] == "https://uploads.hub.test/assets"
    assert hosts == ["api.hub.test", "uploads.hub.test"]


def test_another_base_url_moves_the_apis_own_host_and_keeps_the_others() -> None:
    urls, hosts = _urls("http://127.0.0.1:4010/mock")
    assert urls == {
        "list_repos": "http://127.0.0.1:4010/mock/repos",
        "upload_asset": "https://uploads.hub.test/assets",  # another host: kept
        "list_things": "http://127.0.0.1:4010/mock/preview/beta/things",  # rebased
        "list_local": "http://127.0.0.1:4010/v2/local",  # relative: resolved against it (RFC 3986)
    }
    assert hosts == ["127.0.0.1:4010", "uploads.hub.test"]  # what the preview lists


def test_a_server_whose_scheme_is_a_variable_is_absolute_and_a_base_url_moves_it() -> None:
    # USPTO's `{scheme}://developer.uspto.gov/ds-api`: read as relative, the base URL was ignored
    doc = {
        "openapi": "3.0.1",
        "info": {"title": "Data sets", "version": "1"},
        "servers": [
            {
                "url": "{scheme}://developer.uspto.test/ds-api",
                "variables": {"scheme": {"enum": ["https", "http"], "default": "https"}},
            }
        ],
        "paths": {
            "/": {
                "get": {"operationId": "listDataSets", "responses": {"200": {"description": "ok"}}}
            }
        },
    }
    for given, expected in (
        (None, "https://developer.uspto.test/ds-api/"),
        ("http://127.0.0.1:4010/ds-api", "http://127.0.0.1:4010/ds-api/"),
    ):
        package = derive_package(yaml.safe_dump(doc).encode(), DeriveOptions(base_url=given))
        text = package.files["list_data_sets.md"].decode()
        url = split_frontmatter("list_data_sets.md", text).frontmatter["operation"]["url"]
        assert url == expected
