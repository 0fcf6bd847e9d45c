import Transport
import WebSocket
import XCTest
import XMPP

/// OpenSSL's primitives, as the daemon hands them to SCRAM.
enum OpenSSLSCRAM {
  static func crypto() throws -> SCRAMCrypto {
    let library = try OpenSSLCrypto.shared()
    @Sendable func digest(_ hash: SCRAMHash) -> OpenSSLCrypto.Digest {
      hash == .sha1 ? .sha1 : .sha256
    }
    return SCRAMCrypto(
      hash: { library.hash(digest($0), $1) },
      hmac: { library.hmac(digest($0), key: $1, message: $2) },
      pbkdf2: { library.pbkdf2(digest($0), password: $1, salt: $2, iterations: $3) })
  }
}

final class SCRAMTests: XCTestCase {
  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  /// RFC 5802 §5: user "user", password "pencil".
  func testTheRFC5802SCRAMSHA1ExampleIsReproducedExactly() throws {
    var client = SCRAMClient(
      hash: .sha1, username: "user", password: "pencil", clientNonce: "fyko+d2lbbFgONRv9qkxdawL",
      crypto: try OpenSSLSCRAM.crypto())
    XCTAssertEqual(client.clientFirst(), bytes("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"))
    let final = try client.clientFinal(
      serverFirst: bytes("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"))
    XCTAssertEqual(
      String(decoding: final, as: UTF8.self),
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
    XCTAssertFalse(client.isVerified)
    try client.verify(serverFinal: bytes("v=rmF9pqV8S7suAoZWja4dJRkFsKQ="))
    XCTAssertTrue(client.isVerified)
  }

  /// RFC 7677 §3: user "user", password "pencil".
  func testTheRFC7677SCRAMSHA256ExampleIsReproducedExactly() throws {
    var client = SCRAMClient(
      hash: .sha256, username: "user", password: "pencil", clientNonce: "rOprNGfwEbeRWgbNEkqO",
      crypto: try OpenSSLSCRAM.crypto())
    XCTAssertEqual(client.clientFirst(), bytes("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
    let final = try client.clientFinal(
      serverFirst: bytes(
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"))
    XCTAssertEqual(
      String(decoding: final, as: UTF8.self),
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        + "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    try client.verify(serverFinal: bytes("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="))
    XCTAssertTrue(client.isVerified)
  }

  private func client(_ hash: SCRAMHash = .sha1) throws -> SCRAMClient {
    var client = SCRAMClient(
      hash: hash, username: "user", password: "pencil", clientNonce: "abc",
      crypto: try OpenSSLSCRAM.crypto())
    _ = client.clientFirst()
    return client
  }

  private func refusal(_ serverFirst: String) throws -> SASLError? {
    var client = try client()
    do {
      _ = try client.clientFinal(serverFirst: bytes(serverFirst))
      return nil
    } catch {
      return error
    }
  }

  func testABadServerFirstMessageIsRefusedWithItsReason() throws {
    XCTAssertEqual(
      try refusal("r=abcdef,s=QSXCR+Q6sek8bf92"), .malformedChallenge("no r=, s= or i="))
    XCTAssertEqual(try refusal("r=xyz123,s=QSXCR+Q6sek8bf92,i=1"), .nonceMismatch)
    XCTAssertEqual(try refusal("r=abc,s=QSXCR+Q6sek8bf92,i=1"), .nonceMismatch)
    XCTAssertEqual(
      try refusal("r=abcd,s=!!,i=1"), .malformedChallenge("the salt is not base64"))
    XCTAssertEqual(try refusal("r=abcd,s=,i=1"), .malformedChallenge("the salt is not base64"))
    for count in ["0", "-1", "x", "", "+5", "99999999999999999999"] {
      XCTAssertEqual(
        try refusal("r=abcd,s=QSXCR+Q6sek8bf92,i=\(count)"),
        .malformedChallenge("the iteration count is not a positive number"), count)
    }
    XCTAssertEqual(
      try refusal("r=abcd,s=QSXCR+Q6sek8bf92,i=600001"), .tooManyIterations(600_001, limit: 600_000)
    )
    XCTAssertEqual(
      try refusal("m=ext,r=abcd,s=QSXCR+Q6sek8bf92,i=1"),
      .malformedChallenge("a mandatory extension (m=)"))
    XCTAssertEqual(
      try refusal("r=abcd,r=abce,s=QSXCR+Q6sek8bf92,i=1"), .malformedChallenge("r= twice"))
    XCTAssertEqual(try refusal("garbage"), .malformedChallenge("a field that is not k=value"))
    XCTAssertEqual(
      try refusal("r=abcd,,s=QSXCR+Q6sek8bf92,i=1"),
      .malformedChallenge("a field that is not k=value"))
  }

  func testUnknownExtensionsInTheServerFirstAreIgnored() throws {
    XCTAssertNil(try refusal("r=abcd,s=QSXCR+Q6sek8bf92,i=1,x=future"))
  }

  func testAWrongServerSignatureIsRefused() throws {
    var client = try client()
    _ = try client.clientFinal(serverFirst: bytes("r=abcd,s=QSXCR+Q6sek8bf92,i=1"))
    XCTAssertThrowsError(try client.verify(serverFinal: bytes("v=rmF9pqV8S7suAoZWja4dJRkFsKQ="))) {
      XCTAssertEqual($0 as? SASLError, .serverSignatureMismatch)
    }
    XCTAssertFalse(client.isVerified)
  }

  func testTheServersErrorIsReported() throws {
    var client = try client()
    _ = try client.clientFinal(serverFirst: bytes("r=abcd,s=QSXCR+Q6sek8bf92,i=1"))
    XCTAssertThrowsError(try client.verify(serverFinal: bytes("e=invalid-proof"))) {
      XCTAssertEqual($0 as? SASLError, .serverError("invalid-proof"))
    }
  }

  func testMessagesOutOfOrderAreRefused() throws {
    var client = try client()
    XCTAssertThrowsError(try client.verify(serverFinal: bytes("v=AAAA"))) {
      XCTAssertEqual($0 as? SASLError, .unexpected("a server-final"))
    }
    var again = try self.client()
    _ = try again.clientFinal(serverFirst: bytes("r=abcd,s=QSXCR+Q6sek8bf92,i=1"))
    XCTAssertThrowsError(try again.clientFinal(serverFirst: bytes("r=abcd,s=QSXCR+Q6sek8bf92,i=1")))
    {
      XCTAssertEqual($0 as? SASLError, .unexpected("a second challenge"))
    }
  }

  func testCommasAndEqualsSignsInTheUserNameAreEscaped() throws {
    var client = SCRAMClient(
      hash: .sha256, username: "a,b=c", password: "p", clientNonce: "n",
      crypto: try OpenSSLSCRAM.crypto())
    XCTAssertEqual(client.clientFirst(), bytes("n,,n=a=2Cb=3Dc,r=n"))
  }

  func testFailingCryptoEndsTheExchange() {
    let broken = SCRAMCrypto(
      hash: { _, _ in nil }, hmac: { _, _, _ in nil }, pbkdf2: { _, _, _, _ in nil })
    var client = SCRAMClient(
      hash: .sha1, username: "u", password: "p", clientNonce: "abc", crypto: broken)
    _ = client.clientFirst()
    XCTAssertThrowsError(
      try client.clientFinal(serverFirst: bytes("r=abcd,s=QSXCR+Q6sek8bf92,i=1"))
    ) {
      XCTAssertEqual($0 as? SASLError, .cryptoFailed)
    }
  }

  func testOpenSSLsDigestsMatchKnownValues() throws {
    let library = try OpenSSLCrypto.shared()
    XCTAssertEqual(
      library.hash(.sha1, bytes("abc")).map { Base64.encode($0) }, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
    XCTAssertEqual(
      library.hash(.sha256, bytes("abc")).map { Base64.encode($0) },
      "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
  }
}
