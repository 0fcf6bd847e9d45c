@_exported import JSON
