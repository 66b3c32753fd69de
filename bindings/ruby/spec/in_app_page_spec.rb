# frozen_string_literal: true

# Formats::Text.marshal (what Prometheus::Middleware::Exporter serves) on
# Shmetrics::DataStore: the metrics on the store are written by the library
# in one call (SHMETRICS_FORMAT_CLIENT_RUBY_TEXT), and the page must be byte
# for byte what prometheus-client's own marshal writes from the same
# values, which the spec renders too (the method the binding prepends to).
require "prometheus/client/formats/text"

describe "Formats::Text.marshal on Shmetrics::DataStore" do
  let(:registry) { Prometheus::Client::Registry.new }
  let(:text) { Prometheus::Client::Formats::Text }

  before { Prometheus::Client.config.data_store = ShmetricsSpec.fresh }

  # prometheus-client's own marshal, from the metrics' values.
  def in_ruby(registry)
    text.method(:marshal).super_method.call(registry)
  end

  # A counter whose class is not prometheus-client's: written by Ruby.
  class OwnCounter < Prometheus::Client::Counter; end

  def define_metrics
    {
      requests: registry.counter(:app_requests_total, docstring: "Requests \\ served.\nAll.", labels: %i[route code]),
      jobs: registry.counter(:jobs, docstring: "No _total."),
      own: registry.register(OwnCounter.new(:own_total, docstring: "Own class.")),
      temp: registry.gauge(:temp_celsius, docstring: "Per process.", labels: %i[room]),
      busy: registry.gauge(:busy_workers, docstring: "Summed.", store_settings: { aggregation: :sum }),
      latency: registry.histogram(:latency_seconds, docstring: "Default buckets.", labels: %i[route]),
      sizes: registry.histogram(:size_bytes, docstring: "Mixed bounds.", buckets: [1.0e-05, 1, 2.5, 1000]),
      floats: registry.histogram(:ratio, docstring: "Integral Floats: Ruby writes them.", buckets: [1.0, 2.0]),
      summary: registry.summary(:response_bytes, docstring: "Summary.", labels: %i[route])
    }
  end

  def record(m, i)
    m[:requests].increment(labels: { route: "/a\"b\\c\nd", code: "200" }, by: 1 + i)
    m[:requests].increment(labels: { route: "/é", code: "500" }, by: 1e20)
    m[:jobs].increment(by: 0.1 + 0.2)
    m[:own].increment
    m[:temp].set(-1.5e-07 * (i + 1), labels: { room: "k" })
    m[:busy].increment(by: 1e15)
    [0.005, 0.3, 7, 1e6].each { |v| m[:latency].observe(v, labels: { route: "/x" }) }
    m[:sizes].observe(3)
    m[:floats].observe(1.5)
    m[:summary].observe(2.5, labels: { route: "/x" })
  end

  it "writes what prometheus-client writes from the same values, from several processes" do
    m = define_metrics
    record(m, 0)
    in_workers(2, ->(i) { record(m, i + 1) }) do
      page = text.marshal(registry)
      expect(page).to eq(in_ruby(registry))
      expect(page).to include(%(app_requests_total{route="/a\\"b\\\\c\\nd",code="200"} 6.0\n))
      expect(page).to include(%(busy_workers 3.0e+15\n), %(size_bytes_bucket{le="1"} 0.0\n),
                              %(ratio_bucket{le="1.0"} 0.0\n), %(own_total 3.0\n))
    end
  end

  it "writes metrics without series and an empty registry as Ruby does" do
    registry.counter(:idle_total, docstring: "Never incremented.", labels: %i[route])
    registry.histogram(:idle_seconds, docstring: "Never observed.", labels: %i[route])
    expect(text.marshal(registry)).to eq(in_ruby(registry))
    expect(text.marshal(Prometheus::Client::Registry.new)).to eq("")
  end

  it "keeps the registry's order across runs of metrics on the store and others" do
    registry.register(OwnCounter.new(:first_total, docstring: "Ruby."))
    registry.counter(:second_total, docstring: "Library.").increment
    registry.register(OwnCounter.new(:third_total, docstring: "Ruby.")).increment
    registry.gauge(:fourth, docstring: "Library.", store_settings: { aggregation: :max }).set(4)
    page = text.marshal(registry)
    expect(page).to eq(in_ruby(registry))
    expect(page.scan(/^# TYPE (\w+)/).flatten).to eq(%w[first_total second_total third_total fourth])
  end
end
