# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Writes events into a shmetrics store. A StatsD name and its tag keys
    # become a family, tag values a series:
    # - `increment` adds to a counter;
    # - `gauge` sets a gauge shared by all processes (the last value set
    #   by any of them);
    # - `measure`, `histogram` and `distribution` observe into a histogram
    #   with `buckets` (log-spaced by default, `DEFAULT_BUCKETS`), whose new
    #   observations the exporter sends to DogStatsD as a packed
    #   distribution;
    # - `set` is passed through to the agent if the client has
    #   `passthrough:`, or refused.
    # The series handle of each (name, tags) is cached per client, so a
    # repeated event costs two hash lookups and one store update.
    class StoreSink
      # Bounds of 2^(k/8) from 2^-7 (0.0078) to 2^22 (4.2e6): in
      # milliseconds, 8 µs to 70 minutes, each bucket 9.05% wider than the
      # one below. An observation reaches the agent as its bucket's upper
      # bound, so its value is at most 9.05% above the truth.
      DEFAULT_BUCKETS = (-56..176).map { |k| 2.0**(k / 8.0) }.freeze

      # Most series cached through one sink before a client's cache for
      # the kind at hand is emptied (against tags of unbounded cardinality).
      CACHE_LIMIT = 10_000

      @sinks = {}
      @sinks_lock = Mutex.new

      class << self
        # One sink per store path, shared by the clients of a process.
        def for(store, buckets: nil)
          return new(store, buckets: buckets) unless store.is_a?(String)

          @sinks_lock.synchronize { @sinks[[store, buckets]] ||= new(store, buckets: buckets) }
        end
      end

      attr_reader :store, :buckets

      def initialize(store, buckets: nil)
        @store = store.is_a?(String) ? Backend.open(store) : store
        @buckets = (buckets || DEFAULT_BUCKETS).map { |b| Float(b) }.freeze
        @families = {}
        @lock = Mutex.new
        @warned = {}
        @cached = 0
      end

      def sample?(_rate) = true

      def flush(blocking: false); end

      def emit(client, type, name, value, sample_rate, tags, no_prefix)
        if type == :s
          agent = client.passthrough or raise UnsupportedError,
            "StatsD.set cannot be held in the store: set `passthrough:` (or STATSD_ADDR) to the agent's address"
          return agent.set(client.metric_name(name, no_prefix), value, sample_rate, client.metric_tags(tags))
        end

        unless value.is_a?(Numeric) && (type != :c || value >= 0)
          raise ValueError, "StatsD #{NAMES.fetch(type)} needs a number#{" >= 0" if type == :c}, not #{value.inspect}"
        end
        series = series(client, type, name, tags, no_prefix)
        case type
        when :c then Backend.add(@store, series, value)
        when :g then Backend.set(@store, series, value)
        else Backend.observe(@store, series, value)
        end
      end

      # The series handle for an event, from the client's cache or looked
      # up (and registered) in the store.
      def series(client, type, name, tags, no_prefix)
        by_name = client.series_cache(no_prefix, KINDS.fetch(type))
        ((root = by_name[name]) && SeriesCache.find(root, tags)) ||
          lookup(client, by_name, type, name, tags, no_prefix)
      end

      private

      KINDS = { c: :c, g: :g, ms: :h, h: :h, d: :h }.freeze
      NAMES = { c: "increment", g: "gauge", ms: "measure", h: "histogram", d: "distribution" }.freeze
      private_constant :KINDS, :NAMES

      def lookup(client, by_name, type, name, tags, no_prefix)
        full = client.metric_name(name, no_prefix)
        kind = { c: :counter, g: :gauge, h: :histogram }.fetch(KINDS.fetch(type))
        pairs = label_pairs(client.metric_tags(tags), kind)
        family, label_names = family(kind, full, pairs.keys.sort)
        extra = pairs.keys - label_names
        warn_once(full, extra, label_names) unless extra.empty?
        series = Backend.series(@store, family, label_names.map { |l| pairs.fetch(l, "") })
        @lock.synchronize do
          if (@cached += 1) > CACHE_LIMIT
            by_name.clear
            @cached = 0
          end
          SeriesCache.store(by_name[name] ||= {}, tags, series)
        end
        series
      end

      # Tags as label name => value. `k:v` is k => v; a bare tag `k` is
      # k => "true". Names are made valid Prometheus label names.
      def label_pairs(tags, kind)
        pairs = {}
        tags&.each do |t|
          k, v = t.split(":", 2)
          k = k.gsub(/[^a-zA-Z0-9_]/, "_")
          k = "_#{k}" if k.empty? || k.match?(/\A(\d|__)/)
          k = "tag_#{k}" if kind == :histogram && k == "le"
          pairs[k] = v || "true"
        end
        pairs
      end

      # The family for this kind and StatsD name, registered on first use
      # with the label names of that use. The store keeps one definition
      # per name for the host: the first process's tag keys stay.
      def family(kind, full, label_names)
        key = [kind, full]
        @families[key] || @lock.synchronize do
          @families[key] ||= begin
            name = Backend.family_name(full)
            [Backend.register(@store, kind, name, label_names, @buckets), label_names.freeze]
          rescue Backend::Conflict
            existing = Backend.label_names(@store, kind, name)
            raise unless existing

            [Backend.register(@store, kind, name, existing, @buckets), existing.freeze]
          end
        end
      end

      def warn_once(full, extra, label_names)
        key = [full, extra]
        return if @warned[key]

        @warned[key] = true
        StatsD.logger.warn("#{full}: tags #{extra.join(", ")} left out: the metric's tags " \
          "are #{label_names.empty? ? "none" : label_names.join(", ")} (fixed by its first use)")
      end
    end
  end
end
