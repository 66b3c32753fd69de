# frozen_string_literal: true

module Shmetrics
  module StatsD
    module Instrument
      # statsd-instrument's `StatsD::Instrument::Client`, writing into a
      # shmetrics store. Every event is recorded: `sample_rate` is kept in
      # captures (and so in assertions) but never drops an event, because
      # an update of the store costs less than the coin toss; totals at the
      # exporter are exact.
      class Client
        class << self
          # A client from the environment: `SHMETRICS_STATSD_STORE` (the
          # store's path; without it events are dropped, as
          # statsd-instrument drops them outside production),
          # `STATSD_PREFIX`, `STATSD_DEFAULT_TAGS` (comma-separated),
          # `STATSD_SAMPLE_RATE`, `STATSD_ADDR` (the agent that `set`,
          # `event` and `service_check` are passed through to), and
          # `SHMETRICS_STATSD_TTL` (seconds after which a series no process
          # updated is forgotten).
          def from_env(env = Environment.current)
            rate = env["STATSD_SAMPLE_RATE"]
            ttl = env["SHMETRICS_STATSD_TTL"]
            tags = env["STATSD_DEFAULT_TAGS"]
            new(
              store: env["SHMETRICS_STATSD_STORE"],
              prefix: env["STATSD_PREFIX"],
              default_tags: tags&.split(","),
              default_sample_rate: rate && Float(rate),
              passthrough: env["STATSD_ADDR"],
              ttl: ttl && Float(ttl),
            )
          end
        end

        attr_reader :sink, :prefix, :default_tags, :passthrough, :buckets, :ttl

        # Keyword arguments of statsd-instrument's constructor that decide
        # the wire format or the batching; the store needs none of them.
        IGNORED_OPTIONS = %i[
          implementation datagram_builder_class enable_aggregation
          aggregation_flush_interval aggregation_max_context_size
        ].freeze

        def initialize(store: nil, sink: nil, prefix: nil, default_tags: nil,
          default_sample_rate: nil, passthrough: nil, buckets: nil, ttl: nil, **ignored)
          unknown = ignored.keys - IGNORED_OPTIONS
          raise ArgumentError, "unknown keywords: #{unknown.join(", ")}" unless unknown.empty?

          @prefix = prefix
          @default_tags = default_tags
          @default_sample_rate = default_sample_rate
          @buckets = buckets
          @ttl = ttl
          @passthrough = passthrough.is_a?(String) ? Passthrough.new(passthrough) : passthrough
          @prefix_part = prefix ? "#{prefix}.".tr(":|@", "_") : ""
          @compiled_default_tags = compile_tags(default_tags)
          # Series handles by kind, name and tags; no_prefix has its own.
          @cache = { false => { c: {}, g: {}, h: {} }, true => { c: {}, g: {}, h: {} } }
          @counters, @gauges, @histograms = @cache[false].values_at(:c, :g, :h)
          self.sink = sink || (store ? StoreSink.for(store, buckets: buckets, ttl: ttl) : NullSink.new)
        end

        def default_sample_rate
          @default_sample_rate || 1.0
        end

        # The methods below write into the store straight from the client
        # when its sink is a store (the hot path: a hash lookup by name,
        # then one call into the C extension that finds the series by tags
        # and updates it); anything else (a capture, no prefix, a bad value) goes
        # through the sink's `emit`.

        def increment(name, value = 1, sample_rate: nil, tags: nil, no_prefix: false)
          if (d = @direct) && !no_prefix && value.is_a?(Numeric) && value >= 0
            begin
              ((r = @counters[name]) && SeriesCache.counter_add(r, tags, value)) ||
                d.series(self, :c, name, tags, false).__counter_add(value)
            rescue Shmetrics::Error => e
              d.recover(self, :c, name, value, tags, false, e)
            end
          else
            @sink.emit(self, :c, name, value, sample_rate, tags, no_prefix)
          end
          VOID
        end

        def gauge(name, value, sample_rate: nil, tags: nil, no_prefix: false)
          if (d = @direct) && !no_prefix && value.is_a?(Numeric)
            begin
              ((r = @gauges[name]) && SeriesCache.gauge_set(r, tags, value)) ||
                d.series(self, :g, name, tags, false).__gauge_set(value)
            rescue Shmetrics::Error => e
              d.recover(self, :g, name, value, tags, false, e)
            end
          else
            @sink.emit(self, :g, name, value, sample_rate, tags, no_prefix)
          end
          VOID
        end

        def set(name, value, sample_rate: nil, tags: nil, no_prefix: false)
          @sink.emit(self, :s, name, value, sample_rate, tags, no_prefix)
          VOID
        end

        def histogram(name, value, sample_rate: nil, tags: nil, no_prefix: false)
          record(:h, name, value, sample_rate, tags, no_prefix)
        end

        # A timing in milliseconds; with a block, the block's duration, and
        # the block's value is returned.
        def measure(name, value = nil, sample_rate: nil, tags: nil, no_prefix: false, &block)
          return timed(:ms, name, sample_rate, tags, no_prefix, &block) if block

          record(:ms, name, value, sample_rate, tags, no_prefix)
        end

        def distribution(name, value = nil, sample_rate: nil, tags: nil, no_prefix: false, &block)
          return timed(:d, name, sample_rate, tags, no_prefix, &block) if block

          record(:d, name, value, sample_rate, tags, no_prefix)
        end

        # Passed through to the agent at `passthrough:`, or refused with
        # `UnsupportedError`: an event is no number to add up.
        def event(title, text, tags: nil, no_prefix: false, **options)
          agent!(:event).event(title, text, tags: metric_tags(tags), **options)
          VOID
        end

        # Passed through like `event`.
        def service_check(name, status, tags: nil, no_prefix: false, **options)
          agent!(:service_check).service_check(metric_name(name, no_prefix), status,
            tags: metric_tags(tags), **options)
          VOID
        end

        # Nothing to flush: the store has every event already.
        def force_flush
          VOID
        end

        def clone_with_options(sink: nil, prefix: :keep, default_sample_rate: :keep,
          default_tags: :keep, **ignored)
          self.class.new(
            sink: sink || @sink,
            prefix: prefix == :keep ? @prefix : prefix,
            default_sample_rate: default_sample_rate == :keep ? @default_sample_rate : default_sample_rate,
            default_tags: default_tags == :keep ? @default_tags : default_tags,
            passthrough: @passthrough,
            buckets: @buckets,
            ttl: @ttl,
            **ignored.slice(*IGNORED_OPTIONS),
          )
        end

        def with_options(**options)
          yield clone_with_options(**options)
        end

        def capture_sink
          CaptureSink.new(parent: @sink)
        end

        def with_capture_sink(capture_sink)
          self.sink = capture_sink
          yield
        ensure
          self.sink = @sink.parent
        end

        # The events the block emits through this client, as `Metric`s
        # (they still reach the store).
        def capture(&block)
          sink = capture_sink
          with_capture_sink(sink, &block)
          sink.metrics
        end

        # The name as statsd-instrument would send it: the prefix and a
        # `.`, and `:`, `|`, `@` made `_`.
        def metric_name(name, no_prefix)
          name = name.to_s
          name = name.tr(":|@", "_") if name.match?(/[:|@]/)
          no_prefix ? name : @prefix_part + name
        end

        # The tags as `k:v` strings (`|` and `,` taken out), the default
        # tags first; nil when there are none.
        def metric_tags(tags)
          own = compile_tags(tags)
          return @compiled_default_tags unless own
          return own unless @compiled_default_tags

          @compiled_default_tags + own
        end

        # The cache of series handles for this client: by name, then tags.
        def series_cache(no_prefix, kind)
          @cache[no_prefix][kind]
        end

        private

        def sink=(sink)
          @sink = sink
          @direct = sink.is_a?(StoreSink) ? sink : nil
        end

        def record(type, name, value, sample_rate, tags, no_prefix)
          if (d = @direct) && !no_prefix && value.is_a?(Numeric)
            begin
              ((r = @histograms[name]) && SeriesCache.observe(r, tags, value)) ||
                d.series(self, type, name, tags, false).__observe(value)
            rescue Shmetrics::Error => e
              d.recover(self, type, name, value, tags, false, e)
            end
          else
            @sink.emit(self, type, name, value, sample_rate, tags, no_prefix)
          end
          VOID
        end

        def timed(type, name, sample_rate, tags, no_prefix)
          start = Process.clock_gettime(Process::CLOCK_MONOTONIC, :float_millisecond)
          begin
            yield
          ensure
            stop = Process.clock_gettime(Process::CLOCK_MONOTONIC, :float_millisecond)
            record(type, name, stop - start, sample_rate, tags, no_prefix)
          end
        end

        def compile_tags(tags)
          list = case tags
          when nil then return nil
          when Hash then tags.map { |k, v| "#{k}:#{v}" }
          when String then tags.split(",")
          else tags.map(&:to_s)
          end
          return nil if list.empty?

          list.map { |t| t.match?(/[|,]/) ? t.delete("|,") : t }
        end

        def agent!(what)
          @passthrough or raise UnsupportedError,
            "StatsD.#{what} cannot be held in the store: set `passthrough:` (or STATSD_ADDR) " \
            "to the agent's address to send it there directly"
        end
      end
    end
  end
end
