#!/usr/bin/env bash
# Builds the kubelab image for podman from Debian packages only: no image registry is contacted.
#
#   1. base: mmdebstrap makes a Debian bookworm minbase root filesystem with python3, python3-venv and
#      etcd-server/etcd-client, a virtualenv at /opt/venv holding kubelab's dependencies, and those dependencies'
#      wheels at /opt/wheels (built here on the host with pip, so the image build itself needs no index);
#      `podman import` makes it localhost/kubelab-base:<hash>. Slow (minutes), so it is cached: the tag is a hash
#      of pyproject.toml (the dependencies) and this script (the packages), and an existing tag is reused.
#   2. image: `podman build` of the repository's Dockerfile FROM that base (--build-arg BASE=...), tagged
#      localhost/kubelab:latest, the image docker-compose.yml names. Fast: podman's layer cache rebuilds only
#      what a changed Dockerfile or source tree touches.
#
# Needs root, podman, mmdebstrap and a reachable Debian mirror ($KUBELAB_DEBIAN_MIRROR, default deb.debian.org).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/tools/podman/containers.conf}"
MIRROR="${KUBELAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
IMAGE="${KUBELAB_IMAGE:-localhost/kubelab:latest}"

log() { echo "==> $*"; }
die() { echo "error: $*" >&2; exit 1; }
for tool in podman mmdebstrap; do
    command -v "$tool" >/dev/null || die "$tool is missing (Debian: apt-get install podman mmdebstrap runc)"
done

hash="$(cat pyproject.toml tools/build-image.sh | sha256sum | cut -c1-12)"
BASE="localhost/kubelab-base:$hash"
start=$SECONDS

if podman image exists "$BASE"; then
    log "base image $BASE is current (pyproject.toml and this script unchanged)"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    log "wheels of kubelab's dependencies (pip, on the host)"
    mkdir -p "$work/wheels"
    "$PYTHON" -m pip wheel -q --disable-pip-version-check --wheel-dir "$work/wheels" . 'setuptools>=68' wheel
    rm -f "$work"/wheels/kubelab-*.whl  # the source goes in with the Dockerfile, not in the cached base
    log "root filesystem: Debian bookworm minbase from $MIRROR (mmdebstrap)"
    mmdebstrap --quiet --variant=minbase --mode=root \
        --include=python3,python3-venv,etcd-server,etcd-client,ca-certificates \
        --customize-hook="copy-in $work/wheels /opt" \
        --customize-hook='chroot "$1" python3 -m venv /opt/venv' \
        --customize-hook='chroot "$1" sh -c "cd /opt/wheels && /opt/venv/bin/pip install -q --no-index --find-links /opt/wheels --disable-pip-version-check *.whl"' \
        --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
        bookworm "$work/rootfs.tar" "$MIRROR"
    log "podman import as $BASE"
    podman import -q \
        --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV PIP_NO_INDEX=1' --change 'ENV PIP_FIND_LINKS=/opt/wheels' \
        --change 'CMD ["/bin/bash"]' \
        "$work/rootfs.tar" "$BASE" >/dev/null
    log "base built in $((SECONDS - start))s"
fi

log "podman build $IMAGE FROM $BASE (the Dockerfile)"
podman build -q --network none --build-arg "BASE=$BASE" -t "$IMAGE" -f Dockerfile . >/dev/null
log "$IMAGE is ready ($((SECONDS - start))s in all)"
