# thirteen — every target installs what it needs into ./.venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
GENERATED := service/_generated/.stamp
PROTOS := $(wildcard protos/thirteen/v1/*.proto)

.PHONY: setup test lint format unit run bench clean report-check

setup: $(STAMP) $(GENERATED)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(GENERATED): $(STAMP) $(PROTOS) service/protogen.py
	$(BIN)/python -m service.protogen
	touch $@

lint: setup
	cd protos && ../$(BIN)/buf lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy domain projections service tests

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Every check, on SQLite and PostgreSQL, in 4 processes (worksteal balances the long files).
# The sources are compiled first: where PYTHONDONTWRITEBYTECODE is set (as on these machines),
# every thirteen process the tests start would compile all of them again (~0.15 s of CPU each).
test: lint
	$(BIN)/python -m compileall -q domain projections service tests
	$(BIN)/python -m pytest -n 4 --dist worksteal

# The quick loop: the pure domain's tests and doctests, fewer examples of each property, no
# server, no database, nothing marked slow (about 20 seconds).
unit: setup
	$(BIN)/python -m pytest -q -m "not slow" --hypothesis-profile=quick tests/unit domain projections

ADDRESS ?= 127.0.0.1:50051
DATA ?= var

run: setup
	@echo "thirteen: serving on $(ADDRESS) with SQLite under ./$(DATA), seed key $(DATA)/seed.key, log key $(DATA)/log.key (Ctrl-C stops)."
	@echo "  In another terminal:  $(BIN)/thirteen demo --address $(ADDRESS)"
	@echo "  Or with reflection (a new store holds no wallet until a Credit makes one):"
	@echo "    $(BIN)/buf curl --protocol grpc --http2-prior-knowledge --data '{\"player_id\": \"alice\", \"amount\": 100, \"transfer_id\": \"try-alice\"}' http://$(ADDRESS)/thirteen.v1.WalletService/Credit"
	@echo "    $(BIN)/buf curl --protocol grpc --http2-prior-knowledge --data '{\"player_id\": \"alice\"}' http://$(ADDRESS)/thirteen.v1.WalletService/GetBalance"
	$(BIN)/thirteen serve --address $(ADDRESS) --data $(DATA)

# ONLY="service watch" runs only the named sections (engine encoding service heavy projections
# audit restart watch transparency metrics worker); empty, every one.
ONLY ?=
bench: setup
	$(BIN)/python -m tests.bench $(ONLY)

# The HTML reports drawn by a real browser, explain's and the RNG kit's (`rng test --html`):
# installs Debian's chromium (and a CJK font for the Chinese names of special hands) when
# missing (as root), then runs the screenshot tests, which must not skip here. The RNG page's
# screenshot is kept at RNG_SCREENSHOT, a puxian6 round's explain page (R14) at R14_SCREENSHOT.
RNG_SCREENSHOT ?= var/rng-report.png
R14_SCREENSHOT ?= var/r14-explain.png
report-check: setup
	@command -v chromium >/dev/null 2>&1 && fc-list :lang=zh | grep -q . || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
			fonts-noto-cjk)
	@mkdir -p $(dir $(RNG_SCREENSHOT))
	THIRTEEN_REQUIRE_CHROMIUM=1 THIRTEEN_RNG_SCREENSHOT=$(RNG_SCREENSHOT) \
		THIRTEEN_R14_SCREENSHOT=$(R14_SCREENSHOT) $(BIN)/python -m pytest \
		tests/cli/test_replay_explain.py tests/cli/test_rng_html.py \
		tests/cli/test_explain_variants.py -k chromium
	@echo "thirteen: the RNG page's screenshot is $(RNG_SCREENSHOT)"
	@echo "thirteen: a puxian6 round's explain page (R14) is $(R14_SCREENSHOT)"

# The dispute console in a real browser: installs Debian's chromium, chromium-driver and a CJK
# font when missing (as root), then drives `thirteen console` in headless Chromium through
# chromedriver (tests/browser): search, a player, a round, Chinese; the test must not skip
# here. Screenshots are written to SCREENSHOTS.
SCREENSHOTS ?= var/console-screenshots
.PHONY: browser-check
browser-check: setup
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 && \
		fc-list :lang=zh | grep -q . || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
			chromium-driver fonts-noto-cjk)
	@mkdir -p $(SCREENSHOTS)
	THIRTEEN_REQUIRE_CHROMIUM=1 THIRTEEN_SCREENSHOT_DIR=$(SCREENSHOTS) $(BIN)/python -m pytest \
		tests/browser -p no:cacheprovider
	@echo "thirteen: screenshots in $(SCREENSHOTS)"

# Our transparency log checked by Go's reference code (tests/interop): installs Debian's
# golang-go and golang-golang-x-mod-dev when missing (as root), then builds the Go verifier
# offline and runs it against a real server's log; the test must not skip here.
GO_X_MOD := /usr/share/gocode/src/golang.org/x/mod/sumdb/tlog
.PHONY: interop-check
interop-check: setup
	@command -v go >/dev/null 2>&1 && test -d $(GO_X_MOD) || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends golang-go golang-golang-x-mod-dev)
	THIRTEEN_REQUIRE_GO=1 $(BIN)/python -m pytest -p no:cacheprovider -s tests/interop

# Whether memory levels off (RSS against rounds played, fails above 5% growth over the last
# half), then the seeded fault simulation (tests/simulation) for MINUTES per store, in cycles: a real
# `thirteen serve` restarted at every phase and killed, the server in process with crashes and
# clock jumps, and state-machine examples; prints figures and every failure with its seed.
MINUTES ?= 10
.PHONY: soak
soak: setup
	$(BIN)/python -m tests.simulation --minutes $(MINUTES)

# The RNG kit's full run (docs/concepts/fairness.md): frequency, runs and serial correlation at
# 99% on 10^6 cards dealt now from fresh seeds through the production shuffle, and 20 more samples
# of the same size for the p-values' spread (about 40 s here); the report is printed, written
# to RNG_REPORT and drawn as a page with its plots in RNG_HTML. Exit status 1 when a test fails.
RNG_REPORT ?= var/rng-report.txt
RNG_HTML ?= var/rng-report.html
.PHONY: rng-report
rng-report: setup
	@mkdir -p $(dir $(RNG_REPORT)) $(dir $(RNG_HTML))
	$(BIN)/thirteen rng test --cards 1000000 --out $(RNG_REPORT) --html $(RNG_HTML)
	@echo "thirteen: the report is in $(RNG_REPORT), its page in $(RNG_HTML)"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
