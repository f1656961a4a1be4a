# One image for every kubelab component; docker-compose.yml picks the component with its command
# (`kubelab apiserver ...`, `kubelab kubelet ...`). etcd runs from the official etcd image instead.
# BASE: any Debian bookworm image with python3 >= 3.11 and pip on PATH. tools/build-image.sh passes the base it
# builds from Debian packages with mmdebstrap (no registry pulls; it also holds etcd and the dependencies' wheels).
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

WORKDIR /opt/kubelab
# Dependencies first, so editing the source does not re-download them.
COPY pyproject.toml README.md ./
RUN mkdir apimachinery kubeclient apiserver controllers scheduler kubelet kubelab console clusterdns proxy \
    && pip install . \
    && pip uninstall -y kubelab
COPY apimachinery ./apimachinery
COPY kubeclient ./kubeclient
COPY apiserver ./apiserver
COPY controllers ./controllers
COPY scheduler ./scheduler
COPY kubelet ./kubelet
COPY clusterdns ./clusterdns
COPY console ./console
COPY proxy ./proxy
COPY kubelab ./kubelab
RUN pip install --no-deps . && kubelab --version

# The kubelet keeps pod directories here (each compose node mounts a volume over its own).
RUN mkdir -p /var/lib/kubelab
WORKDIR /var/lib/kubelab
EXPOSE 8080 10248 10250 10257 10259
ENTRYPOINT []
CMD ["kubelab", "--help"]
