import Synchronization
import XCTest
import XMPP

@testable import ChatLinkDaemon

final class SaltedPasswordCacheTests: XCTestCase {
  func testPBKDF2RunsOnceForTheSameSaltAndAgainWhenItChanges() throws {
    let runs = Mutex(0)
    let counting = SCRAMCrypto(
      hash: { _, data in data }, hmac: { _, key, _ in key },
      pbkdf2: { _, password, salt, iterations in
        runs.withLock { $0 += 1 }
        return password + salt + [UInt8(iterations % 256)]
      })
    let cached = counting.cachingSaltedPasswords()
    let first = cached.pbkdf2(.sha1, [1], [2], 4096)
    XCTAssertEqual(cached.pbkdf2(.sha1, [1], [2], 4096), first)
    XCTAssertEqual(runs.withLock { $0 }, 1)
    XCTAssertEqual(cached.pbkdf2(.sha1, [1], [3], 4096), [1, 3, 0])
    XCTAssertEqual(cached.pbkdf2(.sha256, [1], [3], 4096), [1, 3, 0])
    XCTAssertEqual(cached.pbkdf2(.sha256, [9], [3], 4096), [9, 3, 0])
    XCTAssertEqual(runs.withLock { $0 }, 4, "the salt, the hash and the password are the key")
  }
}
