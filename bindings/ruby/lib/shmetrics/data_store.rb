# frozen_string_literal: true

require "monitor"
require "shmetrics"
require "prometheus/client/registry"
require "prometheus/client/formats/text"

module Shmetrics
  # A data store for prometheus-client 4.x (its data-store interface,
  # lib/prometheus/client/data_stores/README.md), on a shmetrics store: all
  # processes of the host write one shared-memory file, each its own writer
  # slot, and `shmetrics serve` (or Prometheus::Middleware::Exporter) reads
  # the totals. Moving from DirectFileStore is one line:
  #
  #   Prometheus::Client.config.data_store =
  #     Shmetrics::DataStore.new(store: "/dev/shm/app.shm")
  #
  # Each metric is one family of the store, of its own type: a counter is a
  # counter, a histogram a histogram with the metric's buckets, a summary a
  # summary. prometheus-client writes a histogram observation as two
  # increments, one of the bucket (`le: "0.1"`, by 1) and one of the sum
  # (`le: "sum"`, by the value); this store records the whole observation
  # in the sum's increment (one `observe` of the value, which the store
  # puts in the same bucket: the first bound not below it) and lets the
  # bucket's pass, so the exporter's page shows one histogram family with
  # the user's buckets, never loose counters. Summaries likewise
  # (`quantile: "count"` and `quantile: "sum"`). See docs/ruby.md.
  #
  # Settings per metric (`store_settings:`): `aggregation:`, for gauges
  # :all (the default, as DirectFileStore: one series per process,
  # labelled `pid`), :sum, :max, :min, :most_recent, or the live variants
  # :liveall, :livesum, :livemax, :livemin, :live_most_recent, which forget
  # dead processes, or :shared; for the other types only :sum.
  class DataStore
    class InvalidStoreSettingsError < StandardError; end

    GAUGE_AGGREGATIONS = {
      all: :all, sum: :sum, max: :max, min: :min, most_recent: :most_recent,
      liveall: :liveall, livesum: :livesum, livemax: :livemax, livemin: :livemin,
      live_most_recent: :live_most_recent, shared: :shared
    }.freeze
    AGGREGATION_MODES = GAUGE_AGGREGATIONS.keys.freeze
    DEFAULT_METRIC_SETTINGS = { aggregation: :sum }.freeze
    DEFAULT_GAUGE_SETTINGS = { aggregation: :all }.freeze

    # The shmetrics store the metrics live in.
    attr_reader :store

    # `store`: a Shmetrics::Store, or the path of one to open (created if
    # missing) with `options` (Store.new's); default Shmetrics.store.
    def initialize(store: nil, **options)
      @store =
        case store
        when Store then store
        when nil then options.empty? ? Shmetrics.store : Store.new(nil, **options)
        else Store.new(store.to_s, **options)
        end
    end

    def for_metric(metric_name, metric_type:, metric_settings: {})
      defaults = metric_type == :gauge ? DEFAULT_GAUGE_SETTINGS : DEFAULT_METRIC_SETTINGS
      settings = defaults.merge(metric_settings)
      validate_metric_settings(metric_type, settings)
      metric = MetricHook.current
      metric = nil unless metric && metric.name == metric_name
      klass = { counter: CounterStore, gauge: GaugeStore, histogram: HistogramStore,
                summary: SummaryStore }.fetch(metric_type) do
        raise InvalidStoreSettingsError, "unknown metric type #{metric_type.inspect}"
      end
      klass.new(@store, metric_name, metric_type, settings, metric)
    end

    private

    def validate_metric_settings(metric_type, settings)
      unless (settings.keys - [:aggregation]).empty?
        raise InvalidStoreSettingsError, "Only :aggregation setting can be specified"
      end
      aggregation = settings[:aggregation]
      if metric_type == :gauge
        return if GAUGE_AGGREGATIONS.key?(aggregation)
        raise InvalidStoreSettingsError,
              "Gauges need a valid :aggregation (#{AGGREGATION_MODES.map(&:inspect).join(', ')}), " \
              "got #{aggregation.inspect}"
      end
      return if aggregation == :sum
      raise InvalidStoreSettingsError,
            "Only gauges take an :aggregation other than :sum: a #{metric_type} is summed over " \
            "processes (got #{aggregation.inspect})"
    end

    # prometheus-client calls `for_metric` from Metric#initialize, which
    # does not pass the metric's docstring, labels or buckets. This module,
    # prepended to Prometheus::Client::Metric, makes the metric being
    # built visible to `for_metric` for the length of the constructor, so
    # that the store's family gets the metric's help text, label names and
    # buckets. Other data stores never look.
    module MetricHook
      KEY = :__shmetrics_metric_being_built

      def self.current
        Thread.current[KEY]
      end

      def initialize(*args, **kwargs, &block)
        outer = Thread.current[KEY]
        Thread.current[KEY] = self
        super
      ensure
        Thread.current[KEY] = outer
      end
    end
    Prometheus::Client::Metric.prepend(MetricHook)

    # Prometheus::Client::Formats::Text.marshal (what
    # Prometheus::Middleware::Exporter serves): the registry's metrics on a
    # DataStore are written by the library, in one call per run of them
    # (SHMETRICS_FORMAT_CLIENT_RUBY_TEXT, byte for byte the text
    # prometheus-client writes from their values), and any other metric by
    # prometheus-client itself, in the registry's order. A metric whose
    # class is not one of prometheus-client's four is left to Ruby, as its
    # `values` may differ.
    module TextFormat
      STOCK = [Prometheus::Client::Counter, Prometheus::Client::Gauge, Prometheus::Client::Histogram,
               Prometheus::Client::Summary].freeze
      # The `registry` prometheus-client's own marshal is given for a run of
      # other metrics.
      Metrics = Struct.new(:metrics)

      def marshal(registry)
        runs = TextFormat.runs(registry.metrics)
        return super if runs.none? { |r| r[0] }
        runs.map { |store, run| store ? store.__send__(:__render_client_ruby, run) : super(Metrics.new(run)) }.join
      end

      # The metrics in runs: [store, family names] for metrics on the same
      # Shmetrics::Store, [nil, metrics] for the others.
      def self.runs(metrics)
        runs = []
        metrics.each do |metric|
          store, name = native_page_family(metric)
          last = runs.last
          if last && last[0].equal?(store)
            last[1] << (store ? name : metric)
          else
            runs << [store, [store ? name : metric]]
          end
        end
        runs
      end

      def self.native_page_family(metric)
        return nil unless STOCK.include?(metric.class)
        ms = metric.instance_variable_get(:@store)
        ms.is_a?(MetricStore) ? ms.__native_page_family : nil
      end
    end
    Prometheus::Client::Formats::Text.singleton_class.prepend(TextFormat)

    # The view of one metric onto the store: one family, registered from
    # the metric's definition when the metric is known (the usual case), else
    # on the first write from its label names.
    class MetricStore
      def initialize(store, name, type, settings, metric)
        @store = store
        @name = name
        @type = type
        @settings = settings
        @lock = Monitor.new
        @snapshot = nil
        @help = metric ? metric.docstring.to_s : ""
        @family = define(metric.labels) if metric
      end

      # The family's series may be written without it; it makes the reads
      # inside it (Histogram#get) share one snapshot of the store.
      def synchronize
        @lock.synchronize do
          outer = @snapshot
          @snapshot ||= :unset
          begin
            yield
          ensure
            @snapshot = outer
          end
        end
      end

      # This metric's value for `labels`, merged over every process (a
      # difference from DirectFileStore, whose `get` reads this process's
      # own file): 0.0 when there is no such series.
      def get(labels:)
        fam = family_snapshot
        return 0.0 unless fam
        value_of(fam, labels)
      end

      # [the store, the family's name in it] when Formats::Text may write
      # this metric in the library (see TextFormat), else nil: the family
      # is defined (else Ruby writes its header alone).
      def __native_page_family
        @family ? [@store, registered_name] : nil
      end

      # Every label set with its value, merged over every process.
      def all_values
        out = Hash.new(0.0)
        fam = family_snapshot
        return out unless fam
        names = fam[:label_names].map(&:to_sym)
        fam[:series].each do |s|
          labels = names.zip(s[:labels]).to_h
          labels[s[:extra][0].to_sym] = s[:extra][1] if s[:extra] && s[:extra][0] == "pid"
          next if s[:extra] && s[:extra][0] != "pid" # the overflow series has no label set of the metric's
          each_value(labels, s) { |l, v| out[l] = v }
        end
        out
      end

      private

      # The labels an update's Hash may hold besides the metric's.
      def extra_labels
        nil
      end

      # The page client_ruby served (Formats::Text): bounds as Ruby writes
      # the defaults and Integer bounds (le="1", not "1.0"), no
      # `_created`, the text format 0.0.4 only (SHMETRICS_HINT_SHORT_BOUNDS
      # | SHMETRICS_HINT_NO_CREATED | SHMETRICS_HINT_TEXT_ONLY;
      # docs/ARCHITECTURE.md, "Exposition hints").
      HINTS = 1 | 2 | 8

      def spec(label_names)
        { name: @name.to_s, help: @help, labels: label_names.map(&:to_sym), hints: HINTS }
      end

      def define(label_names)
        @family = Family.__new(@store, spec(label_names), extra_labels)
      end

      # The family, defined from the first label set when the metric was
      # not known to `for_metric`.
      def family(labels)
        @family || @lock.synchronize do
          @family ||= define(labels.keys - Array(extra_labels))
        end
      end

      def registered_name
        @name.to_s
      end

      def family_snapshot
        snap = @snapshot
        return snap unless snap.nil? || snap == :unset
        fam = @store.snapshot(registered_name).first
        @snapshot = fam if snap == :unset
        fam
      end

      def series_of(fam, labels)
        names = fam[:label_names]
        want = names.map { |n| Shmetrics.__label_value(labels[n.to_sym]) }
        fam[:series].find { |s| s[:labels] == want && (s[:extra].nil? || s[:extra][0] == "pid") }
      end

      def value_of(fam, labels)
        s = series_of(fam, labels)
        s ? s[:value].to_f : 0.0
      end

      def each_value(labels, series)
        yield labels, series[:value].to_f
      end
    end

    # A counter: increments add to this process's slot. `set` (which
    # prometheus-client uses only to create a series at zero) adds the
    # difference from the current total, and cannot lower it.
    class CounterStore < MetricStore
      def increment(labels:, by: 1)
        (@family || family(labels)).__counter_add(labels, by)
      end

      def set(labels:, val:)
        f = family(labels)
        return f.__touch(labels) if val.zero?
        current = get(labels: labels)
        if val < current
          raise Shmetrics::InvalidValueError,
                "shmetrics: #{@name}: a counter cannot be set below its total (#{current}), got #{val}"
        end
        f.__counter_add(labels, val - current)
      end

      private

      def spec(label_names)
        # name_as_given: the exposition names the counter as prometheus-client
        # does (`_total` only if the name has it).
        super.merge(kind: 1, name_as_given: true)
      end

      def registered_name
        @name.to_s.delete_suffix("_total")
      end
    end

    # A gauge, in the store's gauge mode for its aggregation.
    class GaugeStore < MetricStore
      def set(labels:, val:)
        family(labels).__gauge_set(labels, val)
      end

      def increment(labels:, by: 1)
        if @settings[:aggregation] == :most_recent || @settings[:aggregation] == :live_most_recent
          raise InvalidStoreSettingsError,
                "The :most_recent aggregation does not support the use of increment/decrement"
        end
        family(labels).__gauge_add(labels, by)
      end

      private

      def spec(label_names)
        super.merge(kind: 2, gauge_mode: Store::GAUGE_MODES.fetch(GAUGE_AGGREGATIONS.fetch(@settings[:aggregation])))
      end

      # With :all, `get` is this process's value, as DirectFileStore's.
      def value_of(fam, labels)
        return super unless %i[all liveall].include?(@settings[:aggregation])
        pid = Process.pid.to_s
        want = fam[:label_names].map { |n| Shmetrics.__label_value(labels[n.to_sym]) }
        s = fam[:series].find { |x| x[:labels] == want && x[:extra] == ["pid", pid] }
        s ? s[:value].to_f : 0.0
      end
    end

    # A histogram: the observation is recorded whole from the increment of
    # `le: "sum"` (one observe of the value); the bucket's increment is
    # implied by it.
    class HistogramStore < MetricStore
      SUM = "sum"

      def initialize(store, name, type, settings, metric)
        @buckets = metric&.buckets
        unless @buckets
          raise InvalidStoreSettingsError,
                "Shmetrics::DataStore needs a histogram's buckets: create it as a " \
                "Prometheus::Client::Histogram (for_metric was called without one)"
        end
        @le = @buckets.map(&:to_s) + ["+Inf"]
        super
      end

      def increment(labels:, by: 1)
        return unless labels[:le] == SUM
        (@family || family(labels)).__observe(labels, by)
      end

      # The library writes an integral bound as an Integer (`le="1"`) and
      # any other as a Float: Formats::Text writes the metric's buckets so
      # when they are Integers or non-integral Floats. Other buckets (`1.0`,
      # a Rational) are written by Ruby.
      def __native_page_family
        native = @buckets.all? do |b|
          b.is_a?(Integer) ? b.abs < 2**53 : b.is_a?(Float) && b.finite? && b != b.round
        end
        native ? super : nil
      end

      def set(labels:, val:)
        unless val.zero?
          raise Shmetrics::Error,
                "shmetrics: #{@name}: a histogram's buckets cannot be set, only observed"
        end
        family(labels).__touch(labels)
      end

      private

      def extra_labels
        [:le]
      end

      def spec(label_names)
        super.merge(kind: 3, buckets: @buckets.map { |b| Float(b) })
      end

      def value_of(fam, labels)
        s = series_of(fam, labels)
        return 0.0 unless s
        le = labels[:le].to_s
        return s[:value].to_f if le == SUM
        i = @le.index(le)
        return 0.0 unless i
        cum = s[:cumulative]
        (cum[i] - (i.zero? ? 0 : cum[i - 1])).to_f
      end

      def each_value(labels, series)
        cum = series[:cumulative]
        prev = 0
        @le.each_with_index do |le, i|
          yield labels.merge(le: le), (cum[i] - prev).to_f
          prev = cum[i]
        end
        yield labels.merge(le: SUM), series[:value].to_f
      end
    end

    # A summary (count and sum): the observation is recorded whole from the
    # increment of `quantile: "sum"`.
    class SummaryStore < MetricStore
      SUM = "sum"
      COUNT = "count"

      def increment(labels:, by: 1)
        return unless labels[:quantile] == SUM
        (@family || family(labels)).__observe(labels, by)
      end

      def set(labels:, val:)
        unless val.zero?
          raise Shmetrics::Error, "shmetrics: #{@name}: a summary cannot be set, only observed"
        end
        family(labels).__touch(labels)
      end

      private

      def extra_labels
        [:quantile]
      end

      def spec(label_names)
        super.merge(kind: 4)
      end

      def value_of(fam, labels)
        s = series_of(fam, labels)
        return 0.0 unless s
        case labels[:quantile].to_s
        when SUM then s[:value].to_f
        when COUNT then s[:count].to_f
        else 0.0
        end
      end

      def each_value(labels, series)
        yield labels.merge(quantile: COUNT), series[:count].to_f
        yield labels.merge(quantile: SUM), series[:value].to_f
      end
    end
  end
end
