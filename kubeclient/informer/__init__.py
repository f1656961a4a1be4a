"""The informer machinery (client-go's ``tools/cache``): store/indexer, list-watch, reflector, informer, factory."""

from kubeclient.informer.factory import InformerFactory
from kubeclient.informer.informer import HandlerRegistration, SharedInformer, wait_for_cache_sync
from kubeclient.informer.listwatch import ListerWatcher, ListWatch
from kubeclient.informer.reflector import Delta, Reflector, list_all_pages
from kubeclient.informer.stats import ReflectorStats, snapshot
from kubeclient.informer.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    Store,
    field_index_func,
    meta_namespace_key,
    namespace_index_func,
    node_name_index_func,
    split_meta_namespace_key,
)

__all__ = [
    "NAMESPACE_INDEX", "NODE_NAME_INDEX", "Delta", "DeletedFinalStateUnknown", "IndexFunc", "Indexer",
    "InformerFactory", "ListWatch", "ListerWatcher", "Reflector", "ReflectorStats", "HandlerRegistration",
    "SharedInformer", "Store",
    "field_index_func", "list_all_pages", "meta_namespace_key", "namespace_index_func", "node_name_index_func",
    "snapshot", "split_meta_namespace_key", "wait_for_cache_sync",
]
