import Transport
import XCTest

/// Proxy addresses as configured or found in the environment.
final class ProxyAddressTests: XCTestCase {
  func testProxyAddressesParseAndNoProxyExcludesHostsAndDomains() {
    XCTAssertEqual(
      ProxyAddress(url: "http://proxy.example:3128/"),
      ProxyAddress(host: "proxy.example", port: 3128))
    XCTAssertEqual(ProxyAddress(url: "proxy:8080"), ProxyAddress(host: "proxy", port: 8080))
    XCTAssertEqual(ProxyAddress(url: "http://[::1]:3128"), ProxyAddress(host: "::1", port: 3128))
    XCTAssertNil(ProxyAddress(url: "http://user:pw@proxy:3128"))
    XCTAssertNil(ProxyAddress(url: "socks5://proxy:1080"))
    // An IPv6 address needs brackets, and brackets hold only one, with nothing after but a port.
    for bad in ["http://Y::1]:3128", "http://::1", "http://[127.0.0.1]:3128", "http://[::1]x"] {
      XCTAssertNil(ProxyAddress(url: bad), bad)
    }
    let env = [
      "https_proxy": "http://p:1", "http_proxy": "http://q:2",
      "no_proxy": "localhost,.internal.example, 10.0.0.1",
    ]
    let lookup: (String) -> String? = { env[$0] }
    XCTAssertEqual(
      ProxyAddress.fromEnvironment(for: "chat.example", secure: true, environment: lookup)?.port, 1)
    XCTAssertEqual(
      ProxyAddress.fromEnvironment(for: "chat.example", secure: false, environment: lookup)?.port, 2
    )
    XCTAssertNil(ProxyAddress.fromEnvironment(for: "localhost", secure: true, environment: lookup))
    XCTAssertNil(
      ProxyAddress.fromEnvironment(for: "a.internal.example", secure: true, environment: lookup))
    XCTAssertNil(ProxyAddress.fromEnvironment(for: "10.0.0.1", secure: true, environment: lookup))
    XCTAssertNil(
      ProxyAddress.fromEnvironment(
        for: "x", secure: true, environment: { ["https_proxy": "http://p:1", "no_proxy": "*"][$0] })
    )
  }
}
