# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Each installs only what is missing, so a second run goes straight to the work.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
SYSTEM_PACKAGES := ffmpeg espeak-ng sox
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The venv is rebuilt when pyproject.toml changes.
VENV_STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-16)

.PHONY: demo test system-packages setup clean-venv

demo: setup
	$(VENV)/bin/rescue sample
	$(VENV)/bin/rescue build
	$(VENV)/bin/rescue status

test: setup
	$(VENV)/bin/python -m pytest

setup: system-packages $(VENV_STAMP)

system-packages:
	@missing=""; for cmd in ffmpeg ffprobe espeak-ng sox; do command -v $$cmd >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $(SYSTEM_PACKAGES)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES); \
	fi

$(VENV_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	rm -f $(VENV)/.installed-*
	[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

clean-venv:
	rm -rf $(VENV)
