import Transport
import XCTest

/// A TLS context's configuration errors.
final class TLSContextTests: XCTestCase {
  func testAnUnreadableCAFileIsAClearConfigurationError() {
    XCTAssertThrowsError(try TLSContext.make(TLSConfiguration(caFile: "/nonexistent/ca.pem"))) {
      error in
      guard case .tlsConfiguration(let why) = error as? TransportError else {
        return XCTFail("\(error)")
      }
      XCTAssertTrue(why.contains("/nonexistent/ca.pem"))
    }
  }
}
