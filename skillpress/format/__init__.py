"""The package format both the derivation core and the runtime stand on: a skill package's
manifest and index, an operation file's declaration (read, checked, refused), types and tool
schemas within their budget, the names and credential variables a package carries, and the
bounded reading of untrusted documents. Pure: data in, data out."""
