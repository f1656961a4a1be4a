from google.protobuf import any_pb2 as _any_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AdditionalPropertiesItem(_message.Message):
    __slots__ = ("schema", "boolean")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    BOOLEAN_FIELD_NUMBER: _ClassVar[int]
    schema: Schema
    boolean: bool
    def __init__(self, schema: _Optional[_Union[Schema, _Mapping]] = ..., boolean: _Optional[bool] = ...) -> None: ...

class Any(_message.Message):
    __slots__ = ("value", "yaml")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    YAML_FIELD_NUMBER: _ClassVar[int]
    value: _any_pb2.Any
    yaml: str
    def __init__(self, value: _Optional[_Union[_any_pb2.Any, _Mapping]] = ..., yaml: _Optional[str] = ...) -> None: ...

class ApiKeySecurity(_message.Message):
    __slots__ = ("type", "name", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    name: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class BasicAuthenticationSecurity(_message.Message):
    __slots__ = ("type", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class BodyParameter(_message.Message):
    __slots__ = ("description", "name", "required", "schema", "vendor_extension")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    description: str
    name: str
    required: bool
    schema: Schema
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, description: _Optional[str] = ..., name: _Optional[str] = ..., required: _Optional[bool] = ..., schema: _Optional[_Union[Schema, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class Contact(_message.Message):
    __slots__ = ("name", "url", "email", "vendor_extension")
    NAME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    url: str
    email: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, name: _Optional[str] = ..., url: _Optional[str] = ..., email: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Default(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Definitions(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedSchema]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedSchema, _Mapping]]] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("swagger", "info", "host", "base_path", "schemes", "consumes", "produces", "paths", "definitions", "parameters", "responses", "security", "security_definitions", "tags", "external_docs", "vendor_extension")
    SWAGGER_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    BASE_PATH_FIELD_NUMBER: _ClassVar[int]
    SCHEMES_FIELD_NUMBER: _ClassVar[int]
    CONSUMES_FIELD_NUMBER: _ClassVar[int]
    PRODUCES_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    SECURITY_FIELD_NUMBER: _ClassVar[int]
    SECURITY_DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_DOCS_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    swagger: str
    info: Info
    host: str
    base_path: str
    schemes: _containers.RepeatedScalarFieldContainer[str]
    consumes: _containers.RepeatedScalarFieldContainer[str]
    produces: _containers.RepeatedScalarFieldContainer[str]
    paths: Paths
    definitions: Definitions
    parameters: ParameterDefinitions
    responses: ResponseDefinitions
    security: _containers.RepeatedCompositeFieldContainer[SecurityRequirement]
    security_definitions: SecurityDefinitions
    tags: _containers.RepeatedCompositeFieldContainer[Tag]
    external_docs: ExternalDocs
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, swagger: _Optional[str] = ..., info: _Optional[_Union[Info, _Mapping]] = ..., host: _Optional[str] = ..., base_path: _Optional[str] = ..., schemes: _Optional[_Iterable[str]] = ..., consumes: _Optional[_Iterable[str]] = ..., produces: _Optional[_Iterable[str]] = ..., paths: _Optional[_Union[Paths, _Mapping]] = ..., definitions: _Optional[_Union[Definitions, _Mapping]] = ..., parameters: _Optional[_Union[ParameterDefinitions, _Mapping]] = ..., responses: _Optional[_Union[ResponseDefinitions, _Mapping]] = ..., security: _Optional[_Iterable[_Union[SecurityRequirement, _Mapping]]] = ..., security_definitions: _Optional[_Union[SecurityDefinitions, _Mapping]] = ..., tags: _Optional[_Iterable[_Union[Tag, _Mapping]]] = ..., external_docs: _Optional[_Union[ExternalDocs, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Examples(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class ExternalDocs(_message.Message):
    __slots__ = ("description", "url", "vendor_extension")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    description: str
    url: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, description: _Optional[str] = ..., url: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class FileSchema(_message.Message):
    __slots__ = ("format", "title", "description", "default", "required", "type", "read_only", "external_docs", "example", "vendor_extension")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_DOCS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    format: str
    title: str
    description: str
    default: Any
    required: _containers.RepeatedScalarFieldContainer[str]
    type: str
    read_only: bool
    external_docs: ExternalDocs
    example: Any
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, format: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., required: _Optional[_Iterable[str]] = ..., type: _Optional[str] = ..., read_only: _Optional[bool] = ..., external_docs: _Optional[_Union[ExternalDocs, _Mapping]] = ..., example: _Optional[_Union[Any, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class FormDataParameterSubSchema(_message.Message):
    __slots__ = ("required", "description", "name", "allow_empty_value", "type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "vendor_extension")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOW_EMPTY_VALUE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    required: bool
    description: str
    name: str
    allow_empty_value: bool
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, required: _Optional[bool] = ..., description: _Optional[str] = ..., name: _Optional[str] = ..., allow_empty_value: _Optional[bool] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class Header(_message.Message):
    __slots__ = ("type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class HeaderParameterSubSchema(_message.Message):
    __slots__ = ("required", "description", "name", "type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "vendor_extension")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    required: bool
    description: str
    name: str
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, required: _Optional[bool] = ..., description: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class Headers(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedHeader]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedHeader, _Mapping]]] = ...) -> None: ...

class Info(_message.Message):
    __slots__ = ("title", "version", "description", "terms_of_service", "contact", "license", "vendor_extension")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TERMS_OF_SERVICE_FIELD_NUMBER: _ClassVar[int]
    CONTACT_FIELD_NUMBER: _ClassVar[int]
    LICENSE_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    title: str
    version: str
    description: str
    terms_of_service: str
    contact: Contact
    license: License
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, title: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., terms_of_service: _Optional[str] = ..., contact: _Optional[_Union[Contact, _Mapping]] = ..., license: _Optional[_Union[License, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class ItemsItem(_message.Message):
    __slots__ = ("schema",)
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    schema: _containers.RepeatedCompositeFieldContainer[Schema]
    def __init__(self, schema: _Optional[_Iterable[_Union[Schema, _Mapping]]] = ...) -> None: ...

class JsonReference(_message.Message):
    __slots__ = ("_ref", "description")
    _REF_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    _ref: str
    description: str
    def __init__(self, _ref: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class License(_message.Message):
    __slots__ = ("name", "url", "vendor_extension")
    NAME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    url: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, name: _Optional[str] = ..., url: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class NamedAny(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Any
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Any, _Mapping]] = ...) -> None: ...

class NamedHeader(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Header
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Header, _Mapping]] = ...) -> None: ...

class NamedParameter(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Parameter
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Parameter, _Mapping]] = ...) -> None: ...

class NamedPathItem(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: PathItem
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[PathItem, _Mapping]] = ...) -> None: ...

class NamedResponse(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Response
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Response, _Mapping]] = ...) -> None: ...

class NamedResponseValue(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: ResponseValue
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[ResponseValue, _Mapping]] = ...) -> None: ...

class NamedSchema(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: Schema
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[Schema, _Mapping]] = ...) -> None: ...

class NamedSecurityDefinitionsItem(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: SecurityDefinitionsItem
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[SecurityDefinitionsItem, _Mapping]] = ...) -> None: ...

class NamedString(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class NamedStringArray(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: StringArray
    def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[StringArray, _Mapping]] = ...) -> None: ...

class NonBodyParameter(_message.Message):
    __slots__ = ("header_parameter_sub_schema", "form_data_parameter_sub_schema", "query_parameter_sub_schema", "path_parameter_sub_schema")
    HEADER_PARAMETER_SUB_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    FORM_DATA_PARAMETER_SUB_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    QUERY_PARAMETER_SUB_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PATH_PARAMETER_SUB_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    header_parameter_sub_schema: HeaderParameterSubSchema
    form_data_parameter_sub_schema: FormDataParameterSubSchema
    query_parameter_sub_schema: QueryParameterSubSchema
    path_parameter_sub_schema: PathParameterSubSchema
    def __init__(self, header_parameter_sub_schema: _Optional[_Union[HeaderParameterSubSchema, _Mapping]] = ..., form_data_parameter_sub_schema: _Optional[_Union[FormDataParameterSubSchema, _Mapping]] = ..., query_parameter_sub_schema: _Optional[_Union[QueryParameterSubSchema, _Mapping]] = ..., path_parameter_sub_schema: _Optional[_Union[PathParameterSubSchema, _Mapping]] = ...) -> None: ...

class Oauth2AccessCodeSecurity(_message.Message):
    __slots__ = ("type", "flow", "scopes", "authorization_url", "token_url", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_URL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_URL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    flow: str
    scopes: Oauth2Scopes
    authorization_url: str
    token_url: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., flow: _Optional[str] = ..., scopes: _Optional[_Union[Oauth2Scopes, _Mapping]] = ..., authorization_url: _Optional[str] = ..., token_url: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Oauth2ApplicationSecurity(_message.Message):
    __slots__ = ("type", "flow", "scopes", "token_url", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_URL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    flow: str
    scopes: Oauth2Scopes
    token_url: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., flow: _Optional[str] = ..., scopes: _Optional[_Union[Oauth2Scopes, _Mapping]] = ..., token_url: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Oauth2ImplicitSecurity(_message.Message):
    __slots__ = ("type", "flow", "scopes", "authorization_url", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_URL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    flow: str
    scopes: Oauth2Scopes
    authorization_url: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., flow: _Optional[str] = ..., scopes: _Optional[_Union[Oauth2Scopes, _Mapping]] = ..., authorization_url: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Oauth2PasswordSecurity(_message.Message):
    __slots__ = ("type", "flow", "scopes", "token_url", "description", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    TOKEN_URL_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    flow: str
    scopes: Oauth2Scopes
    token_url: str
    description: str
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., flow: _Optional[str] = ..., scopes: _Optional[_Union[Oauth2Scopes, _Mapping]] = ..., token_url: _Optional[str] = ..., description: _Optional[str] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Oauth2Scopes(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedString]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedString, _Mapping]]] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ("tags", "summary", "description", "external_docs", "operation_id", "produces", "consumes", "parameters", "responses", "schemes", "deprecated", "security", "vendor_extension")
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_DOCS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCES_FIELD_NUMBER: _ClassVar[int]
    CONSUMES_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    SCHEMES_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    SECURITY_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    tags: _containers.RepeatedScalarFieldContainer[str]
    summary: str
    description: str
    external_docs: ExternalDocs
    operation_id: str
    produces: _containers.RepeatedScalarFieldContainer[str]
    consumes: _containers.RepeatedScalarFieldContainer[str]
    parameters: _containers.RepeatedCompositeFieldContainer[ParametersItem]
    responses: Responses
    schemes: _containers.RepeatedScalarFieldContainer[str]
    deprecated: bool
    security: _containers.RepeatedCompositeFieldContainer[SecurityRequirement]
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, tags: _Optional[_Iterable[str]] = ..., summary: _Optional[str] = ..., description: _Optional[str] = ..., external_docs: _Optional[_Union[ExternalDocs, _Mapping]] = ..., operation_id: _Optional[str] = ..., produces: _Optional[_Iterable[str]] = ..., consumes: _Optional[_Iterable[str]] = ..., parameters: _Optional[_Iterable[_Union[ParametersItem, _Mapping]]] = ..., responses: _Optional[_Union[Responses, _Mapping]] = ..., schemes: _Optional[_Iterable[str]] = ..., deprecated: _Optional[bool] = ..., security: _Optional[_Iterable[_Union[SecurityRequirement, _Mapping]]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Parameter(_message.Message):
    __slots__ = ("body_parameter", "non_body_parameter")
    BODY_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    NON_BODY_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    body_parameter: BodyParameter
    non_body_parameter: NonBodyParameter
    def __init__(self, body_parameter: _Optional[_Union[BodyParameter, _Mapping]] = ..., non_body_parameter: _Optional[_Union[NonBodyParameter, _Mapping]] = ...) -> None: ...

class ParameterDefinitions(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedParameter]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedParameter, _Mapping]]] = ...) -> None: ...

class ParametersItem(_message.Message):
    __slots__ = ("parameter", "json_reference")
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    JSON_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    parameter: Parameter
    json_reference: JsonReference
    def __init__(self, parameter: _Optional[_Union[Parameter, _Mapping]] = ..., json_reference: _Optional[_Union[JsonReference, _Mapping]] = ...) -> None: ...

class PathItem(_message.Message):
    __slots__ = ("_ref", "get", "put", "post", "delete", "options", "head", "patch", "parameters", "vendor_extension")
    _REF_FIELD_NUMBER: _ClassVar[int]
    GET_FIELD_NUMBER: _ClassVar[int]
    PUT_FIELD_NUMBER: _ClassVar[int]
    POST_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    _ref: str
    get: Operation
    put: Operation
    post: Operation
    delete: Operation
    options: Operation
    head: Operation
    patch: Operation
    parameters: _containers.RepeatedCompositeFieldContainer[ParametersItem]
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, _ref: _Optional[str] = ..., get: _Optional[_Union[Operation, _Mapping]] = ..., put: _Optional[_Union[Operation, _Mapping]] = ..., post: _Optional[_Union[Operation, _Mapping]] = ..., delete: _Optional[_Union[Operation, _Mapping]] = ..., options: _Optional[_Union[Operation, _Mapping]] = ..., head: _Optional[_Union[Operation, _Mapping]] = ..., patch: _Optional[_Union[Operation, _Mapping]] = ..., parameters: _Optional[_Iterable[_Union[ParametersItem, _Mapping]]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class PathParameterSubSchema(_message.Message):
    __slots__ = ("required", "description", "name", "type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "vendor_extension")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    required: bool
    description: str
    name: str
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, required: _Optional[bool] = ..., description: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class Paths(_message.Message):
    __slots__ = ("vendor_extension", "path")
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    path: _containers.RepeatedCompositeFieldContainer[NamedPathItem]
    def __init__(self, vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., path: _Optional[_Iterable[_Union[NamedPathItem, _Mapping]]] = ...) -> None: ...

class PrimitivesItems(_message.Message):
    __slots__ = ("type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "vendor_extension")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Properties(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedSchema]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedSchema, _Mapping]]] = ...) -> None: ...

class QueryParameterSubSchema(_message.Message):
    __slots__ = ("required", "description", "name", "allow_empty_value", "type", "format", "items", "collection_format", "default", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "enum", "multiple_of", "vendor_extension")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    IN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOW_EMPTY_VALUE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    required: bool
    description: str
    name: str
    allow_empty_value: bool
    type: str
    format: str
    items: PrimitivesItems
    collection_format: str
    default: Any
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    multiple_of: float
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, required: _Optional[bool] = ..., description: _Optional[str] = ..., name: _Optional[str] = ..., allow_empty_value: _Optional[bool] = ..., type: _Optional[str] = ..., format: _Optional[str] = ..., items: _Optional[_Union[PrimitivesItems, _Mapping]] = ..., collection_format: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., multiple_of: _Optional[float] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ..., **kwargs) -> None: ...

class Response(_message.Message):
    __slots__ = ("description", "schema", "headers", "examples", "vendor_extension")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    description: str
    schema: SchemaItem
    headers: Headers
    examples: Examples
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, description: _Optional[str] = ..., schema: _Optional[_Union[SchemaItem, _Mapping]] = ..., headers: _Optional[_Union[Headers, _Mapping]] = ..., examples: _Optional[_Union[Examples, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class ResponseDefinitions(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedResponse]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedResponse, _Mapping]]] = ...) -> None: ...

class ResponseValue(_message.Message):
    __slots__ = ("response", "json_reference")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    JSON_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    response: Response
    json_reference: JsonReference
    def __init__(self, response: _Optional[_Union[Response, _Mapping]] = ..., json_reference: _Optional[_Union[JsonReference, _Mapping]] = ...) -> None: ...

class Responses(_message.Message):
    __slots__ = ("response_code", "vendor_extension")
    RESPONSE_CODE_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    response_code: _containers.RepeatedCompositeFieldContainer[NamedResponseValue]
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, response_code: _Optional[_Iterable[_Union[NamedResponseValue, _Mapping]]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Schema(_message.Message):
    __slots__ = ("_ref", "format", "title", "description", "default", "multiple_of", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum", "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items", "max_properties", "min_properties", "required", "enum", "additional_properties", "type", "items", "all_of", "properties", "discriminator", "read_only", "xml", "external_docs", "example", "vendor_extension")
    _REF_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MULTIPLE_OF_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MAXIMUM_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_ITEMS_FIELD_NUMBER: _ClassVar[int]
    MAX_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    MIN_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    ENUM_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ALL_OF_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DISCRIMINATOR_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    XML_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_DOCS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    _ref: str
    format: str
    title: str
    description: str
    default: Any
    multiple_of: float
    maximum: float
    exclusive_maximum: bool
    minimum: float
    exclusive_minimum: bool
    max_length: int
    min_length: int
    pattern: str
    max_items: int
    min_items: int
    unique_items: bool
    max_properties: int
    min_properties: int
    required: _containers.RepeatedScalarFieldContainer[str]
    enum: _containers.RepeatedCompositeFieldContainer[Any]
    additional_properties: AdditionalPropertiesItem
    type: TypeItem
    items: ItemsItem
    all_of: _containers.RepeatedCompositeFieldContainer[Schema]
    properties: Properties
    discriminator: str
    read_only: bool
    xml: Xml
    external_docs: ExternalDocs
    example: Any
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, _ref: _Optional[str] = ..., format: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., default: _Optional[_Union[Any, _Mapping]] = ..., multiple_of: _Optional[float] = ..., maximum: _Optional[float] = ..., exclusive_maximum: _Optional[bool] = ..., minimum: _Optional[float] = ..., exclusive_minimum: _Optional[bool] = ..., max_length: _Optional[int] = ..., min_length: _Optional[int] = ..., pattern: _Optional[str] = ..., max_items: _Optional[int] = ..., min_items: _Optional[int] = ..., unique_items: _Optional[bool] = ..., max_properties: _Optional[int] = ..., min_properties: _Optional[int] = ..., required: _Optional[_Iterable[str]] = ..., enum: _Optional[_Iterable[_Union[Any, _Mapping]]] = ..., additional_properties: _Optional[_Union[AdditionalPropertiesItem, _Mapping]] = ..., type: _Optional[_Union[TypeItem, _Mapping]] = ..., items: _Optional[_Union[ItemsItem, _Mapping]] = ..., all_of: _Optional[_Iterable[_Union[Schema, _Mapping]]] = ..., properties: _Optional[_Union[Properties, _Mapping]] = ..., discriminator: _Optional[str] = ..., read_only: _Optional[bool] = ..., xml: _Optional[_Union[Xml, _Mapping]] = ..., external_docs: _Optional[_Union[ExternalDocs, _Mapping]] = ..., example: _Optional[_Union[Any, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class SchemaItem(_message.Message):
    __slots__ = ("schema", "file_schema")
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    FILE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    schema: Schema
    file_schema: FileSchema
    def __init__(self, schema: _Optional[_Union[Schema, _Mapping]] = ..., file_schema: _Optional[_Union[FileSchema, _Mapping]] = ...) -> None: ...

class SecurityDefinitions(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedSecurityDefinitionsItem]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedSecurityDefinitionsItem, _Mapping]]] = ...) -> None: ...

class SecurityDefinitionsItem(_message.Message):
    __slots__ = ("basic_authentication_security", "api_key_security", "oauth2_implicit_security", "oauth2_password_security", "oauth2_application_security", "oauth2_access_code_security")
    BASIC_AUTHENTICATION_SECURITY_FIELD_NUMBER: _ClassVar[int]
    API_KEY_SECURITY_FIELD_NUMBER: _ClassVar[int]
    OAUTH2_IMPLICIT_SECURITY_FIELD_NUMBER: _ClassVar[int]
    OAUTH2_PASSWORD_SECURITY_FIELD_NUMBER: _ClassVar[int]
    OAUTH2_APPLICATION_SECURITY_FIELD_NUMBER: _ClassVar[int]
    OAUTH2_ACCESS_CODE_SECURITY_FIELD_NUMBER: _ClassVar[int]
    basic_authentication_security: BasicAuthenticationSecurity
    api_key_security: ApiKeySecurity
    oauth2_implicit_security: Oauth2ImplicitSecurity
    oauth2_password_security: Oauth2PasswordSecurity
    oauth2_application_security: Oauth2ApplicationSecurity
    oauth2_access_code_security: Oauth2AccessCodeSecurity
    def __init__(self, basic_authentication_security: _Optional[_Union[BasicAuthenticationSecurity, _Mapping]] = ..., api_key_security: _Optional[_Union[ApiKeySecurity, _Mapping]] = ..., oauth2_implicit_security: _Optional[_Union[Oauth2ImplicitSecurity, _Mapping]] = ..., oauth2_password_security: _Optional[_Union[Oauth2PasswordSecurity, _Mapping]] = ..., oauth2_application_security: _Optional[_Union[Oauth2ApplicationSecurity, _Mapping]] = ..., oauth2_access_code_security: _Optional[_Union[Oauth2AccessCodeSecurity, _Mapping]] = ...) -> None: ...

class SecurityRequirement(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedStringArray]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedStringArray, _Mapping]]] = ...) -> None: ...

class StringArray(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, value: _Optional[_Iterable[str]] = ...) -> None: ...

class Tag(_message.Message):
    __slots__ = ("name", "description", "external_docs", "vendor_extension")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_DOCS_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    external_docs: ExternalDocs
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., external_docs: _Optional[_Union[ExternalDocs, _Mapping]] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class TypeItem(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, value: _Optional[_Iterable[str]] = ...) -> None: ...

class VendorExtension(_message.Message):
    __slots__ = ("additional_properties",)
    ADDITIONAL_PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    additional_properties: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, additional_properties: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...

class Xml(_message.Message):
    __slots__ = ("name", "namespace", "prefix", "attribute", "wrapped", "vendor_extension")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    WRAPPED_FIELD_NUMBER: _ClassVar[int]
    VENDOR_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    prefix: str
    attribute: bool
    wrapped: bool
    vendor_extension: _containers.RepeatedCompositeFieldContainer[NamedAny]
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., prefix: _Optional[str] = ..., attribute: _Optional[bool] = ..., wrapped: _Optional[bool] = ..., vendor_extension: _Optional[_Iterable[_Union[NamedAny, _Mapping]]] = ...) -> None: ...
