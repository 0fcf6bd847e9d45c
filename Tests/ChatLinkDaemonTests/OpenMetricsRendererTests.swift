import ChatLinkDaemon
import LinkCore
import XCTest

/// The OpenMetrics text: metadata lines, suffixes, label escaping, numbers, `# EOF`.
final class OpenMetricsRendererTests: XCTestCase {
  func testACounterHasTypeUnitAndHelpAndItsSampleEndsInTotal() {
    let text = OpenMetricsRenderer().render([
      .counter("chatlink_sent_bytes", unit: "bytes", help: "Bytes sent.", 1536)
    ])
    XCTAssertEqual(
      text,
      """
      # TYPE chatlink_sent_bytes counter
      # UNIT chatlink_sent_bytes bytes
      # HELP chatlink_sent_bytes Bytes sent.
      chatlink_sent_bytes_total 1536
      # EOF

      """)
  }

  func testLabelValuesAndHelpEscapeBackslashQuoteAndNewline() {
    let family = MetricFamily(
      name: "x", kind: .gauge, help: "a \"b\"\\c\nd",
      samples: [.init(labels: [MetricLabel("v", "1\\2\"3\n4")], value: 1)])
    XCTAssertEqual(
      OpenMetricsRenderer().render([family]),
      "# TYPE x gauge\n# HELP x a \\\"b\\\"\\\\c\\nd\nx{v=\"1\\\\2\\\"3\\n4\"} 1\n# EOF\n")
  }

  func testConstantLabelsComeFirstOnEverySample() {
    let renderer = OpenMetricsRenderer(constantLabels: [MetricLabel("instance", "staging")])
    let text = renderer.render([
      .counter("c", help: "h", [([MetricLabel("outcome", "dns")], 2), ([], 3)])
    ])
    XCTAssertTrue(text.contains("\nc_total{instance=\"staging\",outcome=\"dns\"} 2\n"), text)
    XCTAssertTrue(text.contains("\nc_total{instance=\"staging\"} 3\n"), text)
  }

  func testNumbersAreWholeWhenWholeAndInfinityIsSpelledAsOpenMetricsWants() {
    XCTAssertEqual(OpenMetricsRenderer.number(3), "3")
    XCTAssertEqual(OpenMetricsRenderer.number(-2), "-2")
    XCTAssertEqual(OpenMetricsRenderer.number(0.25), "0.25")
    XCTAssertEqual(OpenMetricsRenderer.number(1.5e-5), "1.5e-05")
    XCTAssertEqual(OpenMetricsRenderer.number(.infinity), "+Inf")
    XCTAssertEqual(OpenMetricsRenderer.number(-.infinity), "-Inf")
    XCTAssertEqual(OpenMetricsRenderer.number(.nan), "NaN")
    XCTAssertEqual(OpenMetricsRenderer.number(1e20), "1e+20")
  }

  func testAHistogramsBucketsAreCumulativeAndEndInPlusInfWithSumAndCount() {
    var histogram = Histogram(bounds: [0.001, 0.01, 0.1])
    for value in [0.0005, 0.005, 0.006, 5] { histogram.observe(value) }
    let text = OpenMetricsRenderer().render([
      .histogram("d_seconds", unit: "seconds", help: "h", histogram)
    ])
    XCTAssertEqual(
      text,
      """
      # TYPE d_seconds histogram
      # UNIT d_seconds seconds
      # HELP d_seconds h
      d_seconds_bucket{le="0.001"} 1
      d_seconds_bucket{le="0.01"} 3
      d_seconds_bucket{le="0.1"} 3
      d_seconds_bucket{le="+Inf"} 4
      d_seconds_sum 5.0115
      d_seconds_count 4
      # EOF

      """)
  }

  func testAnInfoFamilyIsAGaugeNamedInfoWhoseOneSampleIsOne() {
    XCTAssertEqual(
      OpenMetricsRenderer().render([.info("b", help: "h", [MetricLabel("version", "1.2")])]),
      "# TYPE b_info gauge\n# HELP b_info h\nb_info{version=\"1.2\"} 1\n# EOF\n")
  }

  func testTheClassicFormatDescribesTheTotalSeriesAndHasNoUnitNoEOFAndNoEscapedQuote() {
    let text = OpenMetricsRenderer(format: .prometheus).render([
      .counter("s_bytes", unit: "bytes", help: "Say \"hi\".", 2),
      .gauge("g", help: "h", 1),
    ])
    XCTAssertEqual(
      text,
      """
      # TYPE s_bytes_total counter
      # HELP s_bytes_total Say "hi".
      s_bytes_total 2
      # TYPE g gauge
      # HELP g h
      g 1

      """)
  }

  func testNothingToRenderIsJustTheEnd() {
    XCTAssertEqual(OpenMetricsRenderer().render([]), "# EOF\n")
  }
}
