// UTF8Validator and the other byte-level pieces live in JSON, which has no C dependencies, so
// light clients (chatlinkctl) need not link OpenSSL or zlib; WebSocket users see them too.
@_exported import JSON
