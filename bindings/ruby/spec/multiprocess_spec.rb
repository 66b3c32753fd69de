# frozen_string_literal: true

# Shmetrics::DataStore across forked workers, as in a Puma or Unicorn
# cluster: counters summed, gauges combined by their :aggregation, `get`
# and `all_values` as documented in docs/ruby.md.
describe "Shmetrics::DataStore across processes" do
  let(:registry) { Prometheus::Client::Registry.new }

  # Runs the block in `n` forked workers (worker index given) which stay
  # alive until the outer block has run, then reaps them.
  def in_workers(n, work)
    ready_r, ready_w = IO.pipe
    done_r, done_w = IO.pipe
    pids = Array.new(n) do |i|
      fork do
        ready_r.close
        done_w.close
        work.call(i)
        ready_w.write("x")
        done_r.read
        exit!(0)
      end
    end
    ready_w.close
    done_r.close
    expect(ready_r.read(n)).to eq("x" * n)
    yield pids
  ensure
    done_w&.close
    pids&.each { |p| Process.wait(p); expect($?.success?).to be(true) }
  end

  it "sums counters over every worker, dead ones included" do
    c = registry.counter(:jobs_total, docstring: "Jobs.", labels: [:queue])
    c.increment(labels: { queue: "a" })
    in_workers(4, ->(i) { 10.times { c.increment(labels: { queue: "a" }, by: i + 1) } }) do
      expect(c.get(labels: { queue: "a" })).to eql(101.0)
    end
    expect(c.values).to eql({ queue: "a" } => 101.0)
  end

  it "keeps one gauge value per process, labelled pid, by default (as DirectFileStore)" do
    g = registry.gauge(:temperature, docstring: "T.", labels: [:room])
    g.set(1, labels: { room: "x" })
    in_workers(2, ->(i) { g.set(10 + i, labels: { room: "x" }) }) do |pids|
      expected = { { room: "x", pid: Process.pid.to_s } => 1.0 }
      pids.each_with_index { |p, i| expected[{ room: "x", pid: p.to_s }] = 10.0 + i }
      expect(g.values).to eql(expected)
      expect(g.get(labels: { room: "x" })).to eql(1.0) # this process's own
    end
  end

  {
    sum: 1 + 10 + 11, max: 11, min: 1, livesum: 0 + 10 + 11
  }.each do |aggregation, expected|
    it "combines gauges with aggregation: #{aggregation.inspect}" do
      g = registry.gauge(:"g_#{aggregation}", docstring: "G.", store_settings: { aggregation: aggregation })
      g.set(aggregation == :livesum ? 0 : 1)
      in_workers(2, ->(i) { g.set(10 + i) }) do
        expect(g.get).to eql(expected.to_f)
      end
    end
  end

  it "shows the value set last with aggregation: :most_recent" do
    g = registry.gauge(:recent, docstring: "R.", store_settings: { aggregation: :most_recent })
    g.set(5)
    in_workers(1, ->(_) { g.set(7) }) do
      expect(g.get).to eql(7.0)
      g.set(3)
      expect(g.get).to eql(3.0)
    end
    expect { g.increment }.to raise_error(Shmetrics::DataStore::InvalidStoreSettingsError)
  end

  it "records a histogram observation whole, without the bucket increment" do
    h = registry.histogram(:h_seconds, docstring: "H.", buckets: [1, 2])
    h.observe(1.5)
    expect(h.get).to eql("1" => 0.0, "2" => 1.0, "+Inf" => 1.0, "sum" => 1.5)
    # A bucket increment on its own (prometheus-client never makes one)
    # records nothing: the observation comes with the sum's.
    h.instance_variable_get(:@store).increment(labels: { le: "1" }, by: 1)
    expect(h.get).to eql("1" => 0.0, "2" => 1.0, "+Inf" => 1.0, "sum" => 1.5)
  end

  it "refuses to build a histogram's store without the histogram" do
    expect do
      Prometheus::Client.config.data_store.for_metric(:lonely, metric_type: :histogram)
    end.to raise_error(Shmetrics::DataStore::InvalidStoreSettingsError, /buckets/)
  end
end
