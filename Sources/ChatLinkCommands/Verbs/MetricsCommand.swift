import ChatLinkAPI
import JSON

/// `chatlinkctl metrics`.
public struct MetricsCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "metrics",
      abstract: "Print chatlinkd's metrics as OpenMetrics text.",
      discussion: """
        The same text that [Metrics] Listen= serves at /metrics for Prometheus:
        connection state, connects and endings by outcome, traffic, sends, the outbox,
        the store, fsync and ping histograms; it ends in "# EOF".
        --format prometheus prints the classic text format 0.0.4 instead, which
        promtool check metrics reads. With --json, one line: {"text": "..."}.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Option(help: "openmetrics (the default) or prometheus (text 0.0.4, for promtool).")
  public var format: String?

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    let text = try globals.connect(context).metrics(format: format)
    context.write(globals.json ? Format.json(GetMetricsReply(text: text).json) : text)
  }
}
