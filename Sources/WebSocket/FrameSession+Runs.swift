import JSON

// Runs of messages: what the outbox sends, a whole `SendBatch`'s worth at a time.
extension FrameSession {
  /// Queues messages, in order, and counts them in `queued` as they go: a message that fails
  /// (text that is not UTF-8) stops the run, and those before it stay queued.
  ///
  /// Without compression the encoder and the output buffer are taken once for the lot, not
  /// checked for exclusive access per message: a run is a whole `SendBatch`'s worth.
  public func send(contentsOf messages: [Message], queued: inout Int)
    throws(ClientConnection.SendError)
  {
    guard deflater == nil else {
      for message in messages {
        try send(message)
        queued += 1
      }
      return
    }
    // Read in place: a message taken out of the array (`for message in messages`) would
    // count a reference to its bytes.
    try messages.withUnsafeBufferPointer { messages throws(ClientConnection.SendError) in
      try sendRun(count: messages.count, queued: &queued) { index, body in
        let text = messages[index].isText
        return messages[index].withUnsafeBytes { body($0, text) }
      }
    }
  }

  /// Queues text messages kept in one buffer, in order, as `send(contentsOf:queued:)` does:
  /// the outbox's frames, written there without an allocation each.
  public func send(texts: PackedStrings, queued: inout Int) throws(ClientConnection.SendError) {
    guard deflater == nil else {
      for index in texts.indices {
        var result: Result<Void, ClientConnection.SendError> = .success(())
        texts.withUTF8(at: index) { text in
          result = Result { () throws(ClientConnection.SendError) in
            try send(text: UnsafeRawBufferPointer(text))
          }
        }
        try result.get()
        queued += 1
      }
      return
    }
    try sendRun(count: texts.count, queued: &queued) { index, body in
      var valid = false
      texts.withUTF8(at: index) { valid = body(UnsafeRawBufferPointer($0), true) }
      return valid
    }
  }
}
