"""Server-side apply and ``metadata.managedFields`` for every resource (kube's fieldmanager + structured-merge-diff).

``schema`` (list/map types), ``fieldpath`` (FieldsV1 sets), ``typed`` (walks of objects with their types),
``managedfields`` (entries, manager names) and ``manager`` (Update and Apply) — the handlers and the store use
only what is exported here.
"""

from apiserver.fieldmanager.managedfields import Writer, manager_of, prefix_from_user_agent
from apiserver.fieldmanager.manager import FieldManager, conflict_error
from apiserver.fieldmanager.schema import Schema

__all__ = ["FieldManager", "Schema", "Writer", "conflict_error", "manager_of", "prefix_from_user_agent"]
