import ChatLinkDaemon
import XCTest

/// `[Metrics] Listen=`: off by default, an address or a port, a clear error otherwise.
final class MetricsConfigTests: XCTestCase {
  private func load(_ text: String) throws -> Configuration {
    try ConfigLoader.load(sources: [("m.conf", "[Backend]\nURL=ws://a/\n" + text)])
  }

  func testMetricsAreOffByDefaultAndAnEmptyListenTurnsThemOff() throws {
    XCTAssertNil(try load("").metricsListen)
    XCTAssertNil(try load("[Metrics]\nListen=9105\nListen=\n").metricsListen)
  }

  func testAPortAloneListensOnLoopback() throws {
    XCTAssertEqual(
      try load("[Metrics]\nListen=9105\n").metricsListen,
      MetricsListenAddress(host: "127.0.0.1", port: 9105))
    XCTAssertEqual(
      try load("[Metrics]\nListen=[::1]:9106\n").metricsListen,
      MetricsListenAddress(host: "::1", port: 9106))
  }

  func testABadAddressIsAConfigErrorNamingTheKeyLineAndWhy() {
    XCTAssertThrowsError(try load("[Metrics]\nListen=localhost:9105\n")) { error in
      let text = "\(error)"
      XCTAssertTrue(text.hasPrefix("m.conf:4: [Metrics] Listen: "), text)
      XCTAssertTrue(text.contains("not a numeric IPv4 address"), text)
    }
  }
}
