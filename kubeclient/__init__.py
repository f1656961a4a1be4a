"""kubelab's client-go: REST transport, typed-dict resource clients, informers, workqueue, leader election.

Layers (each imports only those above it)::

    types, resources, clock, backoff, config     wire shapes, resource table, time, retry timing, kubeconfig
    rest (RESTClient) | fake (FakeAPIServer)     the Transport: HTTP, or in memory for unit tests
    client (ResourceClient, Clientset), events   requests per resource; event recording
    informer (store, listwatch, reflector,       the List-Watch cache every component builds on
              informer, factory)
    workqueue, leaderelection                    controller plumbing

Only ``rest`` touches the network, and it turns every failure into an ``apimachinery.errors`` exception.
"""

from kubeclient.backoff import Backoff, jittered
from kubeclient.client import PATCH_CONTENT_TYPES, Clientset, PatchType, PodClient, ResourceClient
from kubeclient.clock import REAL_CLOCK, Clock, RealClock, format_time
from kubeclient.config import Config, ConfigError, build_config, load_kubeconfig
from kubeclient.events import EventRecorder, make_event, object_reference
from kubeclient.eventsv1 import EventsV1Recorder, make_event_v1
from kubeclient.fake import FakeAPIServer
from kubeclient.informer import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    Delta,
    HandlerRegistration,
    Indexer,
    IndexFunc,
    InformerFactory,
    ListerWatcher,
    ListWatch,
    Reflector,
    SharedInformer,
    Store,
    field_index_func,
    meta_namespace_key,
    namespace_index_func,
    node_name_index_func,
    split_meta_namespace_key,
    wait_for_cache_sync,
)
from kubeclient.leaderelection import LeaderElector
from kubeclient.resources import (
    CERTIFICATE_SIGNING_REQUESTS,
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CONTROLLER_REVISIONS,
    CRON_JOBS,
    DAEMON_SETS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    EVENTS,
    EVENTS_V1,
    HORIZONTAL_POD_AUTOSCALERS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    RESOURCE_QUOTAS,
    RESOURCES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    SUBJECT_ACCESS_REVIEWS,
    Resource,
    parse_path,
    resource_for,
)
from kubeclient.rest import RESTClient
from kubeclient.types import Object, ObjectKey, Transport, WatchEvent, WatchEventType
from kubeclient.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    QueueShutDown,
    RateLimiter,
    RateLimitingQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "CERTIFICATE_SIGNING_REQUESTS", "CONFIG_MAPS", "CONTROLLER_REVISIONS", "CRON_JOBS", "DAEMON_SETS", "DEPLOYMENTS",
    "ENDPOINTS", "ENDPOINT_SLICES", "EVENTS", "EVENTS_V1",
    "EventsV1Recorder", "make_event_v1", "HORIZONTAL_POD_AUTOSCALERS", "CLUSTER_ROLES", "JOBS", "LEASES",
    "NAMESPACES", "NAMESPACE_INDEX", "NODES",
    "NODE_NAME_INDEX",
    "PATCH_CONTENT_TYPES", "PERSISTENT_VOLUMES", "PERSISTENT_VOLUME_CLAIMS", "POD_DISRUPTION_BUDGETS", "PODS",
    "REAL_CLOCK", "REPLICATION_CONTROLLERS", "REPLICA_SETS",
    "RESOURCE_QUOTAS", "RESOURCES", "SECRETS",
    "SERVICE_ACCOUNTS", "SERVICES", "STATEFUL_SETS", "STORAGE_CLASSES", "SUBJECT_ACCESS_REVIEWS",
    "Backoff", "BucketRateLimiter", "Clientset", "Clock", "Config", "ConfigError", "DelayingQueue", "Delta",
    "DeletedFinalStateUnknown", "EventRecorder", "FakeAPIServer", "IndexFunc", "Indexer", "InformerFactory",
    "ItemExponentialFailureRateLimiter", "LeaderElector", "ListWatch", "ListerWatcher", "MaxOfRateLimiter", "Object",
    "ObjectKey", "PatchType", "PodClient", "Queue", "QueueShutDown", "RESTClient", "RateLimiter",
    "RateLimitingQueue", "RealClock", "Reflector", "Resource", "ResourceClient", "HandlerRegistration",
    "SharedInformer", "Store", "Transport", "WatchEvent", "WatchEventType", "build_config",
    "default_controller_rate_limiter", "field_index_func", "format_time", "jittered",
    "load_kubeconfig", "make_event", "meta_namespace_key", "namespace_index_func", "node_name_index_func",
    "object_reference", "parse_path", "resource_for", "split_meta_namespace_key", "wait_for_cache_sync",
]
