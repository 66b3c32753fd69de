# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Writes events into a shmetrics store, through the gem's native API
    # (Shmetrics::Store). A StatsD name and its tag keys become a family,
    # tag values a series:
    # - `increment` adds to a counter;
    # - `gauge` sets a gauge shared by all processes (the last value set
    #   by any of them);
    # - `measure`, `histogram` and `distribution` observe into a histogram
    #   with `buckets` (log-spaced by default, `DEFAULT_BUCKETS`), whose new
    #   observations the exporter sends to DogStatsD as a packed
    #   distribution;
    # - `set` is passed through to the agent if the client has
    #   `passthrough:`, or refused.
    # The series of each (name, tags) is cached per client as a
    # `Shmetrics::Series` (SeriesCache), so a repeated event costs a hash
    # lookup by name and one call into the C extension, which finds the
    # series by its tags and updates it. A series deleted or expired (`ttl:`) by any process,
    # or a wiped store, is looked up again by the Series itself.
    #
    # An event the store cannot take (its name is registered by another
    # program as another type, the store is full...) is not raised into
    # the app, as statsd-instrument never raises for a metric: it is
    # counted in the store, in `shmetrics_statsd_dropped_events_total`
    # (label `reason`), and logged once per name.
    class StoreSink
      # Bounds of 2^(k/8) from 2^-7 (0.0078) to 2^22 (4.2e6): in
      # milliseconds, 8 µs to 70 minutes, each bucket 9.05% wider than the
      # one below. An observation reaches the agent as its bucket's upper
      # bound, so its value is at most 9.05% above the truth.
      DEFAULT_BUCKETS = (-56..176).map { |k| 2.0**(k / 8.0) }.freeze

      # Most series cached through one sink before a client's cache for
      # the kind at hand is emptied (against tags of unbounded cardinality).
      CACHE_LIMIT = 10_000

      # The counter of events the store could not take, by `reason`.
      DROPPED = "shmetrics_statsd_dropped_events"

      # The store's gauge mode of StatsD gauges: one value for all
      # processes, the last one set.
      GAUGE_MODE = :shared

      @sinks = {}
      @sinks_lock = Mutex.new

      class << self
        # One sink per store path, shared by the clients of a process.
        def for(store, buckets: nil, ttl: nil)
          return new(store, buckets: buckets, ttl: ttl) unless store.is_a?(String)

          @sinks_lock.synchronize { @sinks[[store, buckets, ttl]] ||= new(store, buckets: buckets, ttl: ttl) }
        end

        # The family name of a StatsD name: `.` becomes `:` (which the
        # exporter sends back as `.` with `--statsd.colons-as-dots`), any
        # other character but letters, digits and `_` becomes `_`.
        def family_name(full)
          name = full.tr(".", ":").gsub(/[^a-zA-Z0-9_:]/, "_")
          name.match?(/\A\d/) ? "_#{name}" : name
        end
      end

      attr_reader :store, :buckets, :ttl

      # `store`: a Shmetrics::Store or a path. `ttl`: seconds after which a
      # series no process updated is forgotten (nil: never).
      def initialize(store, buckets: nil, ttl: nil)
        @store = store.is_a?(Shmetrics::Store) ? store : Shmetrics::Store.new(store.to_s)
        @buckets = (buckets || DEFAULT_BUCKETS).map { |b| Float(b) }.freeze
        @ttl = ttl
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

        check_value(type, value)
        update(series(client, type, name, tags, no_prefix), type, value)
      rescue Shmetrics::Error => e
        recover(client, type, name, value, tags, no_prefix, e)
      end

      # The Series for an event, from the client's cache or looked up (and
      # registered) in the store.
      def series(client, type, name, tags, no_prefix)
        by_name = client.series_cache(no_prefix, KINDS.fetch(type))
        ((root = by_name[name]) && SeriesCache.find(root, tags)) ||
          lookup(client, by_name, type, name, tags, no_prefix)
      end

      # After an update raised `error` (the client's fast path calls this
      # too): a family that cannot be registered again (a wipe, then
      # another process took the name with other tag keys) is looked up
      # afresh, once; what still fails is counted and logged, not raised.
      # A value the store refuses (NaN, an infinite increment) raises
      # ValueError.
      def recover(client, type, name, value, tags, no_prefix, error)
        raise ValueError, "StatsD #{NAMES.fetch(type)}: #{error.message}" if error.is_a?(Shmetrics::InvalidValueError)

        forget(client, type, name, no_prefix)
        update(series(client, type, name, tags, no_prefix), type, value)
      rescue Shmetrics::Error => e
        raise ValueError, "StatsD #{NAMES.fetch(type)}: #{e.message}" if e.is_a?(Shmetrics::InvalidValueError)

        drop(client.metric_name(name, no_prefix), reason(e), e)
      end

      # Counts one event the store could not take.
      def count_dropped(reason)
        (@dropped ||= @store.counter(DROPPED, help: "StatsD events the shmetrics facade could not store.",
          labels: [:reason])).series(reason: reason).__counter_add(1)
      rescue Shmetrics::Error
        nil # a store that cannot even count: the log line says it
      end

      private

      KINDS = { c: :c, g: :g, ms: :h, h: :h, d: :h }.freeze
      NAMES = { c: "increment", g: "gauge", ms: "measure", h: "histogram", d: "distribution" }.freeze
      FAMILY_KINDS = { c: :counter, g: :gauge, h: :histogram }.freeze
      private_constant :KINDS, :NAMES, :FAMILY_KINDS

      def check_value(type, value)
        return if value.is_a?(Numeric) && (type != :c || value >= 0)

        raise ValueError, "StatsD #{NAMES.fetch(type)} needs a number#{" >= 0" if type == :c}, not #{value.inspect}"
      end

      def update(series, type, value)
        case type
        when :c then series.__counter_add(value)
        when :g then series.__gauge_set(value)
        else series.__observe(value)
        end
      end

      def lookup(client, by_name, type, name, tags, no_prefix)
        full = client.metric_name(name, no_prefix)
        kind = FAMILY_KINDS.fetch(KINDS.fetch(type))
        pairs = label_pairs(client.metric_tags(tags), kind)
        family = family(kind, full, pairs.keys.sort)
        series = if family.is_a?(Dropped)
          family
        else
          extra = pairs.keys - family.label_names.map(&:to_s)
          warn_once(full, extra, family.label_names) unless extra.empty?
          family.__bind(family.label_names.map { |l| pairs.fetch(l.to_s, "") })
        end
        @lock.synchronize do
          if (@cached += 1) > CACHE_LIMIT
            by_name.clear
            @cached = 0
          end
          SeriesCache.store(by_name[name] ||= {}, tags, series)
        end
        series
      end

      # Drops what the client and this sink cache for a name.
      def forget(client, type, name, no_prefix)
        full = client.metric_name(name, no_prefix)
        @lock.synchronize do
          client.series_cache(no_prefix, KINDS.fetch(type)).delete(name)
          @families.delete([FAMILY_KINDS.fetch(KINDS.fetch(type)), full])
        end
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

      # The family for this kind and StatsD name: a Shmetrics::Family, or
      # a Dropped when the store cannot hold the name.
      def family(kind, full, label_names)
        key = [kind, full]
        @families[key] || @lock.synchronize { @families[key] ||= define(kind, full, label_names) }
      end

      # Registers the family with the tag keys of this first use. The store
      # keeps one definition per name for the host: when another process
      # registered the name first with other tag keys (or buckets), that
      # definition is taken, and the tags are fitted to it as for any
      # event (a missing key is stored empty, an extra one left out).
      def define(kind, full, label_names)
        name = self.class.family_name(full)
        begin
          register(kind, name, label_names, @buckets)
        rescue Shmetrics::ConflictError => e
          existing = @store.snapshot(name).first
          raise e unless existing && existing[:kind] == kind

          register(kind, name, existing[:label_names], existing[:buckets].empty? ? @buckets : existing[:buckets])
        end
      rescue Shmetrics::Error => e
        warn_dropped(full, reason(e), e)
        Dropped.new(self, reason(e))
      end

      # The family, registered now: the store hands back the Family it made
      # before, which may date from before a wipe.
      def register(kind, name, label_names, buckets)
        help = "StatsD #{kind} (shmetrics StatsD facade)"
        case kind
        when :counter then @store.counter(name, help: help, labels: label_names, ttl: @ttl)
        when :gauge then @store.gauge(name, help: help, labels: label_names, mode: GAUGE_MODE, ttl: @ttl)
        else @store.histogram(name, help: help, labels: label_names, buckets: buckets, ttl: @ttl)
        end.__register
      end

      def reason(error)
        case error
        when Shmetrics::ConflictError then "conflict"
        when Shmetrics::StoreFullError then "store_full"
        when Shmetrics::InvalidNameError then "invalid_name"
        else "error"
        end
      end

      # Counts an event the store could not take, and logs the first of
      # each name and reason.
      def drop(full, reason, error)
        count_dropped(reason)
        warn_dropped(full, reason, error)
      end

      def warn_dropped(full, reason, error)
        key = [full, reason]
        return if @warned[key]

        @warned[key] = true
        StatsD.logger.warn("#{full}: events dropped (#{reason}), counted in #{DROPPED}_total: #{error.message}")
      end

      def warn_once(full, extra, label_names)
        key = [full, extra]
        return if @warned[key]

        @warned[key] = true
        StatsD.logger.warn("#{full}: tags #{extra.join(", ")} left out: the metric's tags " \
          "are #{label_names.empty? ? "none" : label_names.join(", ")} (fixed by its first use on the host)")
      end

      # The series of a name the store cannot hold: updates count a
      # dropped event.
      class Dropped
        def initialize(sink, reason)
          @sink = sink
          @reason = reason
        end

        def __counter_add(_value) = @sink.count_dropped(@reason)
        alias_method :__gauge_set, :__counter_add
        alias_method :__observe, :__counter_add
      end
    end
  end
end
