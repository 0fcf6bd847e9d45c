import WebSocket
import XCTest

final class Base64Tests: XCTestCase {
  /// RFC 4648 §10 test vectors.
  func testEncodesAndDecodesTheRFC4648Vectors() {
    let vectors = [
      ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]
    for (plain, encoded) in vectors {
      XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
      XCTAssertEqual(Base64.decode(encoded), Array(plain.utf8))
    }
  }

  func testDecodeRejectsMalformedInput() {
    for bad in ["Zg=", "Z", "Zm9v!", "Zg==Zg==", "=Zg="] {
      XCTAssertNil(Base64.decode(bad), bad)
    }
  }

  func testBinaryRoundTrips() {
    let bytes = (0...255).map { UInt8($0) }
    XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
  }
}
