import TestSupport
import XCTest

@testable import LinkCore

final class DeliveryLedgerTests: XCTestCase {
  private func ledger(sending counts: ClosedRange<UInt64>) -> DeliveryLedger {
    var ledger = DeliveryLedger()
    for count in counts { ledger.recordSent(entry(count), frame: .message(text("frame \(count)"))) }
    return ledger
  }

  func testAnEchoConfirmsItsEntryWithTheFrameThatWentOut() {
    var ledger = ledger(sending: 1...3)
    let sent = ledger.confirm(id: "id-1")
    XCTAssertEqual(sent?.entry.count, 1)
    XCTAssertEqual(sent?.frame.message, text("frame 1"))
    XCTAssertEqual(ledger.unconfirmedCount, 2)
    XCTAssertNil(ledger.confirm(id: "id-1"), "an entry is confirmed once")
  }

  func testAnEchoOutOfOrderConfirmsOnlyItsOwnEntry() {
    var ledger = ledger(sending: 1...3)
    XCTAssertEqual(ledger.confirm(id: "id-2")?.entry.count, 2)
    XCTAssertEqual(ledger.confirm(through: 3).map(\.entry.count), [1, 3])
  }

  func testEchoesOfOtherClientsAndUnsentEntriesConfirmNothing() {
    var ledger = ledger(sending: 1...2)
    XCTAssertNil(ledger.confirm(id: "someone-else"))
    XCTAssertNil(ledger.confirm(id: "id-3"))
    XCTAssertEqual(ledger.unconfirmedCount, 2)
  }

  func testIDHashesAreSeededPerLedgerAndEchoesOfManyIDsFindTheirOwnEntries() {
    // Two ledgers hash the same id differently: colliding ids cannot be prepared in advance.
    let id = "0123456789abcdef"
    XCTAssertNotEqual(DeliveryLedger().idHash(id), DeliveryLedger().idHash(id))
    var ledger = DeliveryLedger()
    XCTAssertEqual(ledger.idHash("ab"), ledger.idHash("ab"))
    XCTAssertNotEqual(ledger.idHash("ab"), ledger.idHash("ba"))
    for count in UInt64(1)...500 { ledger.recordSent(entry(count), frame: .message(text("f"))) }
    for count in stride(from: UInt64(500), through: 1, by: -7) {
      XCTAssertEqual(ledger.confirm(id: "id-\(count)")?.entry.count, count)
      XCTAssertNil(ledger.confirm(id: "other-\(count)"))
    }
    XCTAssertEqual(ledger.unconfirmedCount, 500 - 72)
  }

  func testEchoesInOrderNeverHashAnIDAndAForeignOneIndexesOnlyWhatWasSent() {
    var ledger = ledger(sending: 1...4)
    XCTAssertEqual(ledger.confirm(id: "id-1")?.entry.count, 1, "the oldest: no hash needed")
    XCTAssertEqual(ledger.indexedIDCount, 0)
    XCTAssertNil(ledger.confirm(id: "someone-else"))
    XCTAssertEqual(ledger.indexedIDCount, 3, "ids 2-4 are indexed once something is not the oldest")
    ledger.recordSent(entry(5), frame: .message(text("frame 5")))
    XCTAssertEqual(ledger.confirm(id: "id-5")?.entry.count, 5, "sent after the index was built")
    XCTAssertEqual(ledger.confirm(through: 3).map(\.entry.count), [2, 3])
    XCTAssertEqual(ledger.indexedIDCount, 1)
    XCTAssertEqual(ledger.confirm(id: "id-4")?.entry.count, 4)
    XCTAssertEqual(ledger.indexedIDCount, 0)
  }

  func testEchoesPongsAndReconnectsInAnyOrderConfirmWhatALinearSearchWould() {
    // The ledger against a model that searches its whole list for every echo.
    var random = SplitMix64(seed: 7)
    var ledger = DeliveryLedger()
    var model: [UInt64] = []
    var next: UInt64 = 1
    for step in 0..<4000 {
      switch random.next() % 10 {
      case 0...3:
        ledger.recordSent(entry(next), frame: .message(text("f")))
        model.append(next)
        next += 1
      case 4...6:
        // An echo of ours (sent or not, confirmed or not) or of someone else.
        let count = next > 3 ? next - 1 - random.next() % min(next - 1, 40) : 1
        let id = random.next() % 4 == 0 ? "other-\(count)" : "id-\(count)"
        let expected = id.hasPrefix("id-") ? model.firstIndex(of: count) : nil
        let confirmed = ledger.confirm(id: id)?.entry.count
        XCTAssertEqual(confirmed, expected.map { model[$0] }, "step \(step)")
        if let expected { model.remove(at: expected) }
      case 7, 8:
        let through = next - random.next() % (min(next, 20) + 1)
        let confirmed = ledger.confirm(through: through).map(\.entry.count)
        let prefix = Array(model.prefix(while: { $0 <= through }))
        XCTAssertEqual(confirmed, prefix, "step \(step)")
        model.removeFirst(prefix.count)
      default:
        if random.next() % 5 == 0 {
          // A reconnect: what was unconfirmed goes out again, with the same ids.
          ledger.reset()
          next = model.first ?? next
          model = []
        }
      }
      XCTAssertEqual(ledger.unconfirmedCount, model.count, "step \(step)")
    }
  }

  func testEchoesOfDrawnIDsFindTheirEntriesByTheDigitsThatWentOut() {
    var ledger = DeliveryLedger()
    let entries = OutboxEntry.batch(
      room: nil, texts: ["a", "b", "c"],
      ids: [.generated(0xa1), .generated(0xb2), .generated(0xc3)],
      firstCount: 1, created: .now())
    for entry in entries { ledger.recordSent(entry, frame: .message(text("f"))) }
    XCTAssertEqual(ledger.idHash(ClientID.generated(0xb2)), ledger.idHash("00000000000000b2"))
    XCTAssertEqual(ledger.confirm(id: "00000000000000b2")?.entry.count, 2, "not the oldest")
    XCTAssertNil(ledger.confirm(id: "b2"))
    XCTAssertEqual(ledger.confirm(id: "00000000000000a1")?.entry.count, 1)
    XCTAssertEqual(ledger.confirm(id: "00000000000000c3")?.entry.count, 3)
    XCTAssertEqual(ledger.unconfirmedCount, 0)
  }

  func testALaterPongConfirmsEverythingTheItsPingCoveredAndNothingAfter() {
    var ledger = ledger(sending: 1...5)
    XCTAssertEqual(ledger.confirm(through: 3).map(\.entry.count), [1, 2, 3])
    XCTAssertEqual(ledger.confirm(through: 3).map(\.entry.count), [])
    XCTAssertEqual(ledger.unconfirmedCount, 2)
    XCTAssertNil(ledger.confirm(id: "id-2"))
    XCTAssertEqual(ledger.confirm(id: "id-5")?.entry.count, 5)
  }

  func testABurstIsConfirmedByOnePongInOrder() {
    var ledger = ledger(sending: 1...5000)
    let confirmed = ledger.confirm(through: 5000)
    XCTAssertEqual(confirmed.count, 5000)
    XCTAssertEqual(confirmed.map(\.entry.count), Array(1...5000))
    XCTAssertEqual(ledger.unconfirmedCount, 0)
    XCTAssertEqual(ledger.lastSentCount, 5000)
  }

  func testConfirmingInStepsKeepsTheRestInOrder() {
    var ledger = ledger(sending: 1...3000)
    var confirmed: [UInt64] = []
    for through in stride(from: UInt64(700), through: 3000, by: 700) {
      confirmed += ledger.confirm(through: through).map(\.entry.count)
    }
    confirmed += ledger.confirm(through: 3000).map(\.entry.count)
    XCTAssertEqual(confirmed, Array(1...3000))
  }

  func testAProtocolAcknowledgementConfirmsByCount() {
    var ledger = ledger(sending: 1...3)
    XCTAssertEqual(ledger.confirm(count: 3)?.entry.id, "id-3")
    XCTAssertNil(ledger.confirm(count: 3))
    XCTAssertNil(ledger.confirm(count: 9))
  }

  func testAfterAReconnectEverythingUnconfirmedIsSentAgainFromTheOldest() {
    var ledger = ledger(sending: 1...3)
    let pending = (1...3).map { entry($0) }[...]
    XCTAssertEqual(ledger.firstUnsent(in: pending), 3)
    _ = ledger.confirm(id: "id-1")
    ledger.reset()
    XCTAssertEqual(ledger.lastSentCount, 0)
    XCTAssertEqual(ledger.unconfirmedCount, 0)
    let stillPending = (2...3).map { entry($0) }[...]
    XCTAssertEqual(ledger.firstUnsent(in: stillPending), 0)
    XCTAssertNil(ledger.confirm(id: "id-2"), "nothing is confirmed before it is sent again")
  }

  func testFirstUnsentSkipsWhatThisConnectionAlreadySent() {
    var ledger = DeliveryLedger()
    let pending = (10...20).map { entry($0) }[...]
    XCTAssertEqual(ledger.firstUnsent(in: pending), 0)
    for count in UInt64(10)...14 { ledger.recordSent(entry(count), frame: .message(text("x"))) }
    XCTAssertEqual(ledger.firstUnsent(in: pending), 5)
    XCTAssertEqual(ledger.firstUnsent(in: pending.dropFirst(3)), 5)
  }
}
