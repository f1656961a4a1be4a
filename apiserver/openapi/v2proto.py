"""OpenAPI v2 JSON → gnostic ``openapi_v2.Document``: the protobuf kubectl asks ``/openapi/v2`` for.

client-go's ``DiscoveryClient.OpenAPISchema`` GETs ``/openapi/v2`` with ``Accept:
application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and ``proto.Unmarshal``s the body into gnostic's
``Document``; there is no JSON fallback. kube-apiserver produces that body with gnostic's compiler
(``openapi_v2.ParseDocument`` on its JSON), so this module mirrors the compiler's mapping for the subset of
Swagger 2.0 the generator emits:

* maps become ordered ``Named*`` lists (document order; our JSON has sorted keys, as kube-apiserver's does);
* ``type`` becomes a ``TypeItem`` list, ``items`` an ``ItemsItem`` list, ``additionalProperties`` a schema or bool;
* ``$ref`` goes to ``_ref``; a parameter is a ``BodyParameter`` or a ``NonBodyParameter`` chosen by ``in``;
* ``x-…`` keys become ``vendor_extension`` ``NamedAny`` entries, and ``default``/``enum``/``example`` values
  ``Any`` messages, whose ``yaml`` field holds the value as YAML (kube-openapi's ``VendorExtensionToMap`` and
  kubectl read them back with a YAML decoder).

Anything outside that subset raises ``ValueError`` instead of being dropped silently.
"""

from __future__ import annotations

from typing import Any

import yaml

from apiserver.openapi import openapiv2_pb2 as pb

Json = dict[str, Any]

_SCHEMA_STRINGS = {"$ref": "_ref", "format": "format", "title": "title", "description": "description",
                   "pattern": "pattern", "discriminator": "discriminator"}
_SCHEMA_NUMBERS = {"multipleOf": "multiple_of", "maximum": "maximum", "minimum": "minimum",
                   "maxLength": "max_length", "minLength": "min_length", "maxItems": "max_items",
                   "minItems": "min_items", "maxProperties": "max_properties", "minProperties": "min_properties"}
_SCHEMA_BOOLS = {"exclusiveMaximum": "exclusive_maximum", "exclusiveMinimum": "exclusive_minimum",
                 "uniqueItems": "unique_items", "readOnly": "read_only"}
_PARAM_STRINGS = {"in": "in", "description": "description", "name": "name", "type": "type", "format": "format",
                  "collectionFormat": "collection_format", "pattern": "pattern"}
_PARAM_BOOLS = {"required": "required", "allowEmptyValue": "allow_empty_value", "uniqueItems": "unique_items",
                "exclusiveMaximum": "exclusive_maximum", "exclusiveMinimum": "exclusive_minimum"}
_PARAM_NUMBERS = {"maximum": "maximum", "minimum": "minimum", "maxLength": "max_length", "minLength": "min_length",
                  "maxItems": "max_items", "minItems": "min_items", "multipleOf": "multiple_of"}
_NON_BODY: dict[str, tuple[str, type[Any]]] = {
    "query": ("query_parameter_sub_schema", pb.QueryParameterSubSchema),
    "path": ("path_parameter_sub_schema", pb.PathParameterSubSchema),
    "header": ("header_parameter_sub_schema", pb.HeaderParameterSubSchema),
    "formData": ("form_data_parameter_sub_schema", pb.FormDataParameterSubSchema),
}
_OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch")


def document_to_proto(doc: Json) -> pb.Document:
    """Convert a Swagger 2.0 document (as loaded from JSON) to gnostic's ``Document`` message."""
    out = pb.Document(swagger=doc["swagger"])
    for key, value in doc.items():
        if key == "info":
            out.info.CopyFrom(_info(value))
        elif key in ("host", "basePath"):
            setattr(out, "base_path" if key == "basePath" else "host", value)
        elif key in ("schemes", "consumes", "produces"):
            getattr(out, key).extend(value)
        elif key == "paths":
            out.paths.CopyFrom(_paths(value))
        elif key == "definitions":
            out.definitions.additional_properties.extend(
                pb.NamedSchema(name=name, value=schema_to_proto(s)) for name, s in value.items())
        elif key == "parameters":
            out.parameters.additional_properties.extend(
                pb.NamedParameter(name=name, value=_parameter(p)) for name, p in value.items())
        elif key == "security":
            out.security.extend(_security_requirement(r) for r in value)
        elif key == "securityDefinitions":
            out.security_definitions.CopyFrom(_security_definitions(value))
        elif key.startswith("x-"):
            out.vendor_extension.append(_named_any(key, value))
        elif key != "swagger":
            raise ValueError(f"document: unsupported key {key!r}")
    return out


def schema_to_proto(schema: Json) -> pb.Schema:
    """One JSON Schema object, recursively (properties, items, additionalProperties, allOf)."""
    out = pb.Schema()
    for key, value in schema.items():
        if key in _SCHEMA_STRINGS:
            setattr(out, _SCHEMA_STRINGS[key], value)
        elif key in _SCHEMA_NUMBERS:
            setattr(out, _SCHEMA_NUMBERS[key], value)
        elif key in _SCHEMA_BOOLS:
            setattr(out, _SCHEMA_BOOLS[key], value)
        elif key == "type":
            out.type.value.extend([value] if isinstance(value, str) else value)
        elif key == "required":
            out.required.extend(value)
        elif key == "enum":
            out.enum.extend(_any(v) for v in value)
        elif key in ("default", "example"):
            getattr(out, key).CopyFrom(_any(value))
        elif key == "items":
            out.items.schema.extend(schema_to_proto(s) for s in (value if isinstance(value, list) else [value]))
        elif key == "properties":
            out.properties.additional_properties.extend(
                pb.NamedSchema(name=name, value=schema_to_proto(s)) for name, s in value.items())
        elif key == "additionalProperties":
            if isinstance(value, bool):
                out.additional_properties.boolean = value
            else:
                out.additional_properties.schema.CopyFrom(schema_to_proto(value))
        elif key == "allOf":
            out.all_of.extend(schema_to_proto(s) for s in value)
        elif key.startswith("x-"):
            out.vendor_extension.append(_named_any(key, value))
        else:
            raise ValueError(f"schema: unsupported key {key!r}")
    return out


def _info(info: Json) -> pb.Info:
    out = pb.Info()
    for key, value in info.items():
        if key in ("title", "version", "description"):
            setattr(out, key, value)
        elif key.startswith("x-"):
            out.vendor_extension.append(_named_any(key, value))
        else:
            raise ValueError(f"info: unsupported key {key!r}")
    return out


def _paths(paths: Json) -> pb.Paths:
    out = pb.Paths()
    for name, item in paths.items():
        if name.startswith("x-"):
            out.vendor_extension.append(_named_any(name, item))
        else:
            out.path.append(pb.NamedPathItem(name=name, value=_path_item(item)))
    return out


def _path_item(item: Json) -> pb.PathItem:
    out = pb.PathItem()
    for key, value in item.items():
        if key in _OPERATIONS:
            getattr(out, key).CopyFrom(_operation(value))
        elif key == "parameters":
            out.parameters.extend(_parameters_item(p) for p in value)
        elif key == "$ref":
            out._ref = value
        elif key.startswith("x-"):
            out.vendor_extension.append(_named_any(key, value))
        else:
            raise ValueError(f"path item: unsupported key {key!r}")
    return out


def _operation(op: Json) -> pb.Operation:
    out = pb.Operation()
    for key, value in op.items():
        if key in ("tags", "produces", "consumes", "schemes"):
            getattr(out, key).extend(value)
        elif key in ("summary", "description", "deprecated"):
            setattr(out, key, value)
        elif key == "operationId":
            out.operation_id = value
        elif key == "parameters":
            out.parameters.extend(_parameters_item(p) for p in value)
        elif key == "responses":
            out.responses.CopyFrom(_responses(value))
        elif key == "security":
            out.security.extend(_security_requirement(r) for r in value)
        elif key.startswith("x-"):
            out.vendor_extension.append(_named_any(key, value))
        else:
            raise ValueError(f"operation: unsupported key {key!r}")
    return out


def _parameters_item(param: Json) -> pb.ParametersItem:
    if "$ref" in param:
        return pb.ParametersItem(json_reference=pb.JsonReference(_ref=param["$ref"],
                                                                 description=param.get("description", "")))
    return pb.ParametersItem(parameter=_parameter(param))


def _parameter(param: Json) -> pb.Parameter:
    """``in: body`` → ``BodyParameter``; anything else → the ``NonBodyParameter`` sub-schema named by ``in``."""
    if param.get("in") == "body":
        body = pb.BodyParameter()
        for key, value in param.items():
            if key == "schema":
                body.schema.CopyFrom(schema_to_proto(value))
            elif key in ("description", "name", "in", "required"):
                setattr(body, key, value)
            elif key.startswith("x-"):
                body.vendor_extension.append(_named_any(key, value))
            else:
                raise ValueError(f"body parameter: unsupported key {key!r}")
        return pb.Parameter(body_parameter=body)
    field, sub_schema = _NON_BODY[param["in"]]
    sub = sub_schema()
    for key, value in param.items():
        if key in _PARAM_STRINGS:
            setattr(sub, _PARAM_STRINGS[key], value)
        elif key in _PARAM_BOOLS:
            setattr(sub, _PARAM_BOOLS[key], value)
        elif key in _PARAM_NUMBERS:
            setattr(sub, _PARAM_NUMBERS[key], value)
        elif key == "default":
            sub.default.CopyFrom(_any(value))
        elif key == "enum":
            sub.enum.extend(_any(v) for v in value)
        elif key.startswith("x-"):
            sub.vendor_extension.append(_named_any(key, value))
        else:
            raise ValueError(f"{param['in']} parameter: unsupported key {key!r}")
    return pb.Parameter(non_body_parameter=pb.NonBodyParameter(**{field: sub}))


def _responses(responses: Json) -> pb.Responses:
    out = pb.Responses()
    for code, response in responses.items():
        if code.startswith("x-"):
            out.vendor_extension.append(_named_any(code, response))
            continue
        value = pb.Response(description=response.get("description", ""))
        for key, item in response.items():
            if key == "schema":
                value.schema.schema.CopyFrom(schema_to_proto(item))
            elif key.startswith("x-"):
                value.vendor_extension.append(_named_any(key, item))
            elif key != "description":
                raise ValueError(f"response: unsupported key {key!r}")
        out.response_code.append(pb.NamedResponseValue(name=code, value=pb.ResponseValue(response=value)))
    return out


def _security_requirement(requirement: Json) -> pb.SecurityRequirement:
    return pb.SecurityRequirement(additional_properties=[
        pb.NamedStringArray(name=name, value=pb.StringArray(value=scopes)) for name, scopes in requirement.items()])


def _security_definitions(definitions: Json) -> pb.SecurityDefinitions:
    out = pb.SecurityDefinitions()
    for name, scheme in definitions.items():
        if scheme.get("type") != "apiKey":
            raise ValueError(f"security definition {name!r}: only apiKey is supported")
        key = pb.ApiKeySecurity(**{k: v for k, v in scheme.items() if k in ("type", "name", "in", "description")})
        out.additional_properties.append(pb.NamedSecurityDefinitionsItem(
            name=name, value=pb.SecurityDefinitionsItem(api_key_security=key)))
    return out


def _named_any(name: str, value: Any) -> pb.NamedAny:
    return pb.NamedAny(name=name, value=_any(value))


def _any(value: Any) -> pb.Any:
    """gnostic keeps free-form values as YAML text in ``Any.yaml`` (a scalar without YAML's ``...`` end mark)."""
    text = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, width=1 << 30)
    return pb.Any(yaml=text.removesuffix("...\n"))
