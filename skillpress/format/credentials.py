"""The variables a skill's credentials are read from: `<SLUG>_API_KEY` unless another is named,
`<SLUG>_<NAME>` for one sent beside it, and the rule every one is held to where a package is
written, loaded or called: an environment variable's name, the skill's own (`<SLUG>_…`), never
one of skillpress's own."""

from __future__ import annotations

import re

__all__ = [
    "companion_env",
    "credential_env_refusal",
    "default_credential_env",
    "own_env_prefix",
    "skillpress_own",
]


def default_credential_env(slug: str) -> str:
    """The variable a skill's credential is read from unless another is named: `<SLUG>_API_KEY`
    (`API_<SLUG>_API_KEY` for a slug that starts with a digit, `1password` or `1-0-0`: no
    environment variable's name does)."""
    base = re.sub(r"[^A-Za-z0-9]+", "_", slug).strip("_").upper()
    if not base or base[0].isdigit():
        base = f"API_{base}".rstrip("_")
    return base + "_API_KEY"


def own_env_prefix(slug: str) -> str:
    """What every variable a skill's credentials are read from starts with: `<SLUG>_`."""
    return default_credential_env(slug).removesuffix("API_KEY")


def skillpress_own(name: str) -> bool:
    """Whether `name` may be one of skillpress's own variables (its settings and the secrets
    they name: tokens, NATS and S3 passwords), which no skill's credential is ever read from: a
    `SKILLPRESS_` name other than a skill's default key or client pair (`skillpress` itself,
    as a skill, reads `SKILLPRESS_API_KEY`)."""
    return name.startswith("SKILLPRESS_") and not name.endswith(
        ("_API_KEY", "_CLIENT_ID", "_CLIENT_SECRET")
    )


def credential_env_refusal(name: str, slug: str | None = None) -> str | None:
    """Why `name` cannot be the variable a credential is read from (None: it can): an
    environment variable's name, upper-case letters, digits and '_', not starting with a digit;
    never one of skillpress's own settings; and, for a skill (`slug`), one of its own
    (`<SLUG>_…`): a package may not choose which secret of the host it reads. (A runtime's own
    configuration names any other: `--auth-env`, `SkillHost(credentials=…)`.)"""
    if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,127}", name):
        return (
            f"{name!r} is not an environment variable name: upper-case letters, digits and '_'"
            " (like PETSTORE_API_KEY)"
        )
    if name.startswith("SKILLPRESS_"):
        return f"{name} is one of skillpress's own settings, never a skill's credential"
    if slug is not None and not name.startswith(own_env_prefix(slug)):
        prefix = own_env_prefix(slug)
        return (
            f"{name} is not {slug}'s own: a skill's credentials are read from variables of its"
            f" own ({prefix}…), so a package cannot choose which secret of the host it reads;"
            " a runtime names another where it is configured (--auth-env, or SkillHost"
            " credentials=)"
        )
    return None


def companion_env(slug: str, name: str) -> str:
    """The variable a credential sent beside the skill's first one is read from:
    `<SLUG>_<NAME>` (VTEX's appToken: `VTEX_APP_TOKEN`)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    base = default_credential_env(slug).removesuffix("_API_KEY")
    return f"{base}_{re.sub(r'[^A-Za-z0-9]+', '_', words).strip('_').upper()}"
