import JSON
import WebSocket

/// The rooms: joined at once, or after the store said their newest ids (for a dialect that
/// joins after them), and left.
extension LinkCore {
  mutating func join(_ room: RoomID, _ actions: inout [LinkAction]) {
    guard backend.hasRooms, !rooms.contains(room) else { return }
    rooms.append(room)
    if phase == .ready { join([room], &actions) }
  }

  /// Joins `rooms` on the open connection: at once, or once the store has said the newest id
  /// of each, when the dialect joins after them.
  mutating func join(_ rooms: [RoomID], _ actions: inout [LinkAction]) {
    guard backend.joinsAfterStoredID else {
      for room in rooms {
        if let frame = backend.join(room) { sendJoin(frame, &actions) }
      }
      return
    }
    guard !rooms.isEmpty || awaitingSessionCatchUp else { return }
    awaitingPositions.append(contentsOf: rooms)
    actions.append(.requestPositions(rooms))
  }

  /// The store said the newest ids: the rooms waiting for them are joined after those ids
  /// (those left since, or asked for on a connection that has ended, are not), and a new
  /// session catches up what is not a room's from the newest record's time.
  mutating func joinAwaited(
    _ positions: [RoomID: RoomPosition], newest: Timestamp?, _ actions: inout [LinkAction]
  ) {
    let waiting = awaitingPositions
    awaitingPositions = []
    let catchUp = awaitingSessionCatchUp
    awaitingSessionCatchUp = false
    guard phase == .ready else { return }
    for room in waiting where rooms.contains(room) {
      if let frame = backend.join(room, after: positions[room]) { sendJoin(frame, &actions) }
    }
    if catchUp, let frame = backend.catchUp(newestStored: newest) { sendJoin(frame, &actions) }
  }

  mutating func leave(_ room: RoomID, _ actions: inout [LinkAction]) {
    guard let index = rooms.firstIndex(of: room) else { return }
    rooms.remove(at: index)
    if phase == .ready, let frame = backend.leave(room) { actions.append(.send(frame)) }
  }
}
