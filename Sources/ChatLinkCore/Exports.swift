@_exported import JSON
@_exported import LinkCore
