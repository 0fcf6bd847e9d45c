import XCTest

@testable import Transport

/// OpenSSL is loaded on first use (`OpenSSLLibrary`); what a missing or wrong library gives.
final class OpenSSLLibraryTests: XCTestCase {
  func testTheHeadersSonameIsLoadedAndHasEveryFunction() throws {
    XCTAssertEqual(OpenSSLLibrary.soname, "libssl.so.3")
    let openssl = try OpenSSLLibrary.load(OpenSSLLibrary.soname).get()
    XCTAssertNotNil(openssl.TLS_client_method())
  }

  func testAMissingLibraryIsAClearConfigurationErrorNamingIt() {
    guard case .failure(.tlsConfiguration(let why)) = OpenSSLLibrary.load("libssl.so.999") else {
      return XCTFail("loaded a library that does not exist")
    }
    XCTAssertTrue(why.hasPrefix("TLS needs libssl.so.999 (Debian: libssl3): "), why)
  }

  func testALibraryWithoutOpenSSLsFunctionsIsRefusedNamingTheFirstMissingOne() {
    guard case .failure(.tlsConfiguration(let why)) = OpenSSLLibrary.load("libz.so.1") else {
      return XCTFail("took zlib for OpenSSL")
    }
    XCTAssertTrue(why.hasPrefix("libz.so.1 has no TLS_client_method: "), why)
  }
}
