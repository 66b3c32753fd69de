# frozen_string_literal: true

module Shmetrics
  # An open store file. Every process that opens the same path shares its
  # metrics: each writes its own writer slot, and `shmetrics serve` (or
  # #render) merges them. Open it once per process, before forking if the
  # server preloads (Puma `preload_app!`, Unicorn `preload_app true`): a
  # forked worker claims a writer slot of its own on its first update.
  #
  #   store = Shmetrics::Store.new("/dev/shm/app.shm")
  #   requests = store.counter(:http_requests_total, help: "Requests.",
  #                            labels: %i[route status])
  #   requests.increment(labels: { route: "/", status: "200" })
  class Store
    # The store file used when no path is given: $SHMETRICS_STORE, else
    # this.
    DEFAULT_PATH = "/dev/shm/shmetrics"

    OPTIONS = %i[create read_only mode max_families max_series label_bytes max_writers
                 cells_per_writer sketch_cells_per_writer owner group].freeze

    # The path used when none is given.
    def self.default_path
      env = ENV["SHMETRICS_STORE"]
      env && !env.empty? ? env : DEFAULT_PATH
    end

    # Opens the store at `path` (default: Store.default_path), creating it
    # (mode 0600, or 0660) if it does not exist and `create` is true.
    # Capacities (`max_families`, `max_series`, `label_bytes`,
    # `max_writers`, `cells_per_writer`) apply only when the file is
    # created. `owner` and `group` name a user and a group trusted besides
    # this process's (see docs/ruby.md, "Sizing and permissions").
    def initialize(path = nil, **options)
      unknown = options.keys - OPTIONS
      raise ArgumentError, "unknown option(s) #{unknown.map(&:inspect).join(', ')}" unless unknown.empty?
      Native.load
      __open((path || self.class.default_path).to_s, options)
      @families = {}
      @lock = Mutex.new
    end

    # A counter family. `name` may end in `_total` (the exposition adds it
    # otherwise); `labels` are the label names every update must give.
    def counter(name, help: "", labels: [], unit: nil, exemplars: false, ttl: nil,
                max_series: nil, name_as_given: false)
      family(Counter, name: name, help: help, labels: labels, unit: unit, kind: 1,
                      exemplars: exemplars, ttl: ttl, max_series: max_series,
                      name_as_given: name_as_given)
    end

    # How a gauge's per-process values combine (see docs/ruby.md): the
    # `mode:` of #gauge. Live modes count only live processes.
    GAUGE_MODES = {
      all: 1, liveall: 2, sum: 3, livesum: 4, max: 5, livemax: 6, min: 7, livemin: 8,
      mostrecent: 9, most_recent: 9, livemostrecent: 10, live_most_recent: 10, shared: 11,
      liveaverage: 12, live_average: 12
    }.freeze

    # A gauge family; `mode` (default :livesum) says how the values of the
    # processes combine.
    def gauge(name, help: "", labels: [], unit: nil, mode: :livesum, ttl: nil, max_series: nil)
      gm = GAUGE_MODES.fetch(mode) do
        raise ArgumentError, "unknown gauge mode #{mode.inspect}; use one of #{GAUGE_MODES.keys.join(', ')}"
      end
      family(Gauge, name: name, help: help, labels: labels, unit: unit, kind: 2, gauge_mode: gm,
                    ttl: ttl, max_series: max_series)
    end

    # A histogram family with classic `buckets` (upper bounds, increasing,
    # without +Inf; default the Prometheus clients' 0.005 to 10).
    def histogram(name, help: "", labels: [], unit: nil, buckets: nil, exemplars: false,
                  ttl: nil, max_series: nil)
      family(Histogram, name: name, help: help, labels: labels, unit: unit, kind: 3,
                        buckets: Store.__floats(buckets, :buckets), exemplars: exemplars,
                        ttl: ttl, max_series: max_series)
    end

    # A summary family: `_count` and `_sum`, and the `quantiles` (each in
    # [0, 1]) over the last `max_age` seconds (default 600) in
    # `age_buckets` buckets (default 5): exact while each bucket of each
    # process saw at most 16 observations, else within 0.99%.
    def summary(name, help: "", labels: [], unit: nil, quantiles: nil, max_age: nil,
                age_buckets: nil, ttl: nil, max_series: nil)
      family(Summary, name: name, help: help, labels: labels, unit: unit, kind: 4,
                      quantiles: Store.__floats(quantiles, :quantiles),
                      max_age_ms: Store.__millis(max_age, :max_age), age_buckets: age_buckets,
                      ttl: ttl, max_series: max_series)
    end

    # Looks at what the store's path names now (one fstat and one lstat):
    # when another file replaced the one this handle mapped, opens the path
    # again, so that updates land in the file the exporter serves. Returns
    # true if it reopened. Call it between requests, not per update
    # (Shmetrics::Rack::CheckStore does it at most once per interval).
    def check
      return false if closed? || path_now != :other
      reopen
      true
    rescue Shmetrics::Error
      false
    end

    # Every family and series, merged over all processes, as the exporter
    # would serve them now: Prometheus text (:text) or OpenMetrics.
    # render(format = :text) is defined natively.

    class << self
      # :nodoc: A number of seconds as milliseconds (nil for nil):
      # TypeError for what is not a real number, ArgumentError when
      # negative, FloatDomainError (a RangeError) for NaN or infinity.
      def __millis(seconds, what)
        return nil if seconds.nil?
        unless seconds.is_a?(Numeric) && seconds.real?
          raise TypeError, "shmetrics: #{what} is a number of seconds, not #{seconds.class}"
        end
        raise ArgumentError, "shmetrics: #{what} must not be negative, got #{seconds}" if seconds.negative?
        (seconds * 1000).round
      end

      # :nodoc: A list of numbers as Floats (nil for nil).
      def __floats(list, what)
        return nil if list.nil?
        raise TypeError, "shmetrics: #{what} must be an Array of numbers, not #{list.class}" unless list.is_a?(Array)
        list.map do |x|
          raise TypeError, "shmetrics: #{what} must be numbers, not #{x.class}" unless x.is_a?(Numeric) && x.real?
          Float(x)
        end
      end

      # :nodoc: A label name as a Symbol.
      def __label_name(name)
        return name if name.is_a?(Symbol)
        return name.to_sym if name.is_a?(String) && name.valid_encoding?
        raise InvalidNameError, "shmetrics: the label name #{name.inspect} is not valid UTF-8" if name.is_a?(String)
        raise TypeError, "shmetrics: a label name is a Symbol or a String, not #{name.class}"
      end
    end

    def inspect
      "#<Shmetrics::Store #{path.inspect}#{read_only? ? ' read_only' : ''}#{closed? ? ' closed' : ''}>"
    end

    private

    def family(klass, ttl: nil, **spec)
      spec[:name] = spec[:name].to_s
      spec[:help] = spec[:help].to_s
      spec[:unit] = spec[:unit]&.to_s
      spec[:labels] = Array(spec[:labels]).map { |l| Store.__label_name(l) }
      spec[:ttl_ms] = Store.__millis(ttl, :ttl)
      spec.compact!
      raise Error, "shmetrics: this store was never opened (made without Store.new)" unless @lock
      @lock.synchronize do
        key = [klass, spec]
        @families[key] ||= klass.__new(self, spec)
      end
    end
  end

  class << self
    # The process's default store: the one set with Shmetrics.store=, else
    # Store.new (the file $SHMETRICS_STORE names, or /dev/shm/shmetrics),
    # opened on first use.
    def store
      @store ||= Store.new
    end

    # Sets the default store (a Store, or a path to open).
    def store=(store)
      @store = store.is_a?(Store) || store.nil? ? store : Store.new(store)
    end

    # Checks the given store, or every store this process opened, for a
    # replaced file and reopens it (Store#check). Returns true if any was
    # reopened.
    def check_store(store = nil)
      return store.check if store
      Store.__check_all
    end
  end
end
