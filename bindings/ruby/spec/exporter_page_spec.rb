# frozen_string_literal: true

# What prometheus-client writes through Shmetrics::DataStore, from several
# processes, as the host's exporter (`shmetrics serve`) serves it: each
# histogram and summary one family with the user's buckets (no loose
# `le`/`quantile` counters), totals exact over the processes, and a page
# promtool accepts. Also Prometheus::Middleware::Exporter and Collector on
# the same store.
require "net/http"
require "open3"
require "socket"
require "rack"
require "rack/mock"
require "prometheus/middleware/exporter"
require "prometheus/middleware/collector"

describe "Shmetrics::DataStore on the exporter's page" do
  let(:registry) { Prometheus::Client::Registry.new }
  let(:buckets) { [0.01, 0.1, 1, 2.5] }

  def define_metrics(registry)
    {
      requests: registry.counter(:app_requests_total, docstring: "Requests.", labels: %i[route]),
      latency: registry.histogram(:app_latency_seconds, docstring: "Latency.", labels: %i[route],
                                                        buckets: buckets),
      sizes: registry.summary(:app_response_bytes, docstring: "Sizes.", labels: %i[route]),
      busy: registry.gauge(:app_busy_workers, docstring: "Busy.", store_settings: { aggregation: :sum })
    }
  end

  # Each of `workers` forked processes (and this one) records the same
  # requests; the workers stay alive while the block reads the totals.
  # (Gauges in the non-live modes keep a dead worker's value only until
  # another process reuses its writer slot.)
  def record_in_workers(m, workers, &block)
    record = lambda do |_i = nil|
      [0.005, 0.05, 0.5, 0.5, 3].each do |v|
        m[:requests].increment(labels: { route: "/a" })
        m[:latency].observe(v, labels: { route: "/a" })
        m[:sizes].observe(v * 1000, labels: { route: "/a" })
      end
      m[:busy].increment
    end
    in_workers(workers, record) do
      record.call
      block.call
    end
  end

  def free_port
    s = TCPServer.new("127.0.0.1", 0)
    s.addr[1]
  ensure
    s&.close
  end

  PROMETHEUS_2_ACCEPT = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75," \
                        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

  def scrape_exporter(path)
    port = free_port
    bin = ENV.fetch("SHMETRICS_BIN")
    pid = spawn(bin, "serve", "--store", path, "--listen", "127.0.0.1:#{port}", out: File::NULL, err: File::NULL)
    body = nil
    100.times do
      begin
        # As Prometheus 2.42 asks by default (OpenMetrics first): the page
        # of DataStore's families is still the text format client_ruby
        # served, with no `_created`.
        uri = URI("http://127.0.0.1:#{port}/metrics")
        res = Net::HTTP.start(uri.host, uri.port) do |http|
          http.get(uri.path, "Accept" => PROMETHEUS_2_ACCEPT)
        end
        if res.code == "200" && res.body.include?("app_latency_seconds")
          expect(res["content-type"]).to start_with("text/plain; version=0.0.4")
          expect(res.body).not_to include("_created")
          body = res.body
          break
        end
      rescue SystemCallError
        nil
      end
      sleep 0.05
    end
    body or raise "the exporter served no page with the metrics"
  ensure
    if pid
      Process.kill(:TERM, pid)
      Process.wait(pid)
    end
  end

  it "serves one histogram and one summary family with the user's buckets, exact over processes" do
    m = define_metrics(registry)
    page = nil
    record_in_workers(m, 3) { page = scrape_exporter(ShmetricsSpec::STORE.path) }

    types = page.lines.grep(/^# TYPE app_/).map(&:chomp).sort
    expect(types).to eq(["# TYPE app_busy_workers gauge", "# TYPE app_latency_seconds histogram",
                         "# TYPE app_requests_total counter", "# TYPE app_response_bytes summary"])
    expect(page).not_to match(/le="sum"|quantile="(count|sum)"/)
    lat = page.lines.grep(/^app_latency_seconds/).map(&:chomp)
    expect(lat).to eq([
      %(app_latency_seconds_bucket{route="/a",le="0.01"} 4),
      %(app_latency_seconds_bucket{route="/a",le="0.1"} 8),
      # The Integer bound 1 as client_ruby writes it (Integer#to_s).
      %(app_latency_seconds_bucket{route="/a",le="1"} 16),
      %(app_latency_seconds_bucket{route="/a",le="2.5"} 16),
      %(app_latency_seconds_bucket{route="/a",le="+Inf"} 20),
      %(app_latency_seconds_count{route="/a"} 20),
      %(app_latency_seconds_sum{route="/a"} #{(4 * (0.005 + 0.05 + 0.5 + 0.5 + 3)).round(10)})
    ])
    expect(page).to include(%(app_requests_total{route="/a"} 20\n))
    expect(page).to include(%(app_response_bytes_count{route="/a"} 20\n))
    expect(page).to include("app_busy_workers 4\n")

    out, st = Open3.capture2e("promtool", "check", "metrics", stdin_data: page)
    expect(st.success?).to be(true), out
  end

  it "gives prometheus-client's own exporter the same values" do
    m = define_metrics(registry)
    app = Prometheus::Middleware::Exporter.new(->(_) { [404, {}, []] }, registry: registry)
    res = nil
    record_in_workers(m, 2) { res = Rack::MockRequest.new(app).get("/metrics") }
    expect(res.status).to eq(200)
    body = res.body
    expect(body).to include(%(app_latency_seconds_bucket{route="/a",le="0.01"} 3.0\n))
    expect(body).to include(%(app_latency_seconds_bucket{route="/a",le="1"} 12.0\n))
    expect(body).to include(%(app_latency_seconds_bucket{route="/a",le="+Inf"} 15.0\n))
    expect(body).to include(%(app_latency_seconds_count{route="/a"} 15.0\n))
    expect(body).to include(%(app_requests_total{route="/a"} 15.0\n))
    expect(body).to include(%(app_response_bytes_count{route="/a"} 15.0\n))
    expect(body).to include("app_busy_workers 3.0\n")
  end

  it "counts requests through Prometheus::Middleware::Collector" do
    app = Prometheus::Middleware::Collector.new(->(_) { [200, {}, ["ok"]] }, registry: registry)
    req = Rack::MockRequest.new(app)
    3.times { expect(req.get("/users/42").status).to eq(200) }
    pid = fork { req.get("/users/7"); exit!(0) }
    Process.wait(pid)
    page = ShmetricsSpec::STORE.render
    expect(page).to include(%(http_server_requests_total{code="200",method="get",path="/users/:id"} 4\n))
    expect(page).to match(/^http_server_request_duration_seconds_count\{method="get",path="\/users\/:id"\} 4$/)
    expect(page).to include("# TYPE http_server_request_duration_seconds histogram")
  end
end
