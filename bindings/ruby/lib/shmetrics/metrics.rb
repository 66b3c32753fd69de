# frozen_string_literal: true

module Shmetrics
  # A registered family of series: the common part of Counter, Gauge,
  # Histogram and Summary. Made by Store#counter and its siblings.
  #
  # Updates take the labels as a Hash of label name (a Symbol) to value
  # (any object; its #to_s is stored). Each process keeps the series
  # handle of every label set it has used, so an update looks its labels
  # up in that cache and makes one call into the library, without
  # allocating. A series deleted by another process, or a wiped store, is
  # looked up again transparently.
  class Family
    # :nodoc:
    def self.__new(store, spec, extra_labels = nil)
      f = allocate
      f.send(:__init, store, spec, extra_labels)
      f
    end

    # Families are made by Store#counter, #gauge, #histogram and #summary
    # (or Shmetrics::DataStore): one made otherwise has no store.
    def initialize(*)
      raise Error, "shmetrics: a #{self.class} is made by Store##{self.class.name.split('::').last.downcase}, " \
                   "not #{self.class}.new"
    end

    def name
      spec[:name]
    end

    # Deletes the series with these labels in every process; returns
    # whether it existed.
    def remove(labels: {})
      __remove(labels)
    end

    # Deletes every series of the family; returns how many.
    def clear
      __clear
    end

    # This family's series, merged over all processes: an Array of Hashes
    # (`labels:` a Hash of label name to value, and the values of its
    # type).
    def values
      fam = store.snapshot(registered_name).first
      return [] unless fam
      names = fam[:label_names].map(&:to_sym)
      fam[:series].map do |s|
        labels = names.zip(s[:labels]).to_h
        labels[s[:extra][0].to_sym] = s[:extra][1] if s[:extra]
        s.merge(labels: labels)
      end
    end

    # The value of the series with these labels, merged over all
    # processes (a snapshot of the store: for tests and tools, not for the
    # hot path); nil if there is no such series.
    def get(labels: {})
      labels ||= {}
      raise TypeError, "shmetrics: labels must be a Hash, not #{labels.class}" unless labels.is_a?(Hash)
      want = label_names.map { |n| Shmetrics.__label_value(labels.fetch(n) { labels[n.to_s] }) }
      s = values.find { |v| v[:labels].values_at(*label_names) == want }
      s && __value(s)
    end

    def inspect
      "#<#{self.class} #{name} labels=#{label_names.inspect}>"
    rescue Error
      "#<#{self.class} (no store)>"
    end

    private

    # The name the store knows the family by.
    def registered_name
      name
    end

    def __value(series)
      series[:value]
    end
  end

  # A monotonic counter.
  class Counter < Family
    private def registered_name
      name.delete_suffix("_total")
    end

    # Adds `by` (default 1; not negative, NaN or infinite). `exemplar`, a
    # Hash such as { trace_id: "abc" }, is kept with the increment when
    # the counter was made with `exemplars: true`.
    def increment(by: 1, labels: nil, exemplar: nil)
      return __counter_add(labels, by) unless exemplar
      __exemplar(false, labels, by, Shmetrics.__exemplar_pairs(exemplar))
    end
  end

  # A value that goes up and down.
  class Gauge < Family
    def set(value, labels: nil)
      __gauge_set(labels, value)
    end

    def increment(by: 1, labels: nil)
      __gauge_add(labels, by)
    end

    def decrement(by: 1, labels: nil)
      __gauge_add(labels, Shmetrics.__negate(by))
    end

    def set_to_current_time(labels: nil)
      __set_to_current_time(labels)
    end
  end

  # A classic histogram.
  class Histogram < Family
    # Records `value`; `exemplar` as for Counter#increment.
    def observe(value, labels: nil, exemplar: nil)
      return __observe(labels, value) unless exemplar
      __exemplar(true, labels, value, Shmetrics.__exemplar_pairs(exemplar))
    end

    def buckets
      spec[:buckets] || [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
    end

    private

    def __value(series)
      { count: series[:count], sum: series[:value],
        buckets: (buckets + [Float::INFINITY]).zip(series[:cumulative]).to_h }
    end
  end

  # A summary: count, sum and optional quantiles.
  class Summary < Family
    def observe(value, labels: nil)
      __observe(labels, value)
    end

    private

    def __value(series)
      { count: series[:count], sum: series[:value], quantiles: (series[:quantiles] || []).to_h }
    end
  end

  # :nodoc: -by, for a number only (TypeError otherwise, as an update
  # with a value that is not a number raises).
  def self.__negate(by)
    raise TypeError, "shmetrics: an amount is a number, not #{by.class}" unless by.is_a?(Numeric)
    -by
  end

  # :nodoc:
  def self.__exemplar_pairs(exemplar)
    raise TypeError, "an exemplar is a Hash of label names to values" unless exemplar.is_a?(Hash)
    exemplar.map { |k, v| [k.to_s, v.to_s] }.sort
  end
end

module Shmetrics
  # One series of a family, bound to its label values: what
  # Family#series(labels) returns. Updating it skips the label lookup of
  # Family's own methods. It stays valid when the series is deleted or
  # expired by any process, or the store wiped: the next update looks it
  # up again (and it starts from zero).
  #
  #   ok = requests.series(route: "/users", status: 200)
  #   ok.increment
  class Series
    # Adds `by` to a counter (not negative) or a gauge.
    def increment(by: 1)
      __add(by)
    end

    # Takes `by` from a gauge.
    def decrement(by: 1)
      __add(Shmetrics.__negate(by))
    end

    # Sets a gauge.
    def set(value)
      __gauge_set(value)
    end

    # Sets a gauge to the current Unix time.
    def set_to_current_time
      __set_to_current_time
    end

    # Records `value` in a histogram or summary.
    def observe(value)
      __observe(value)
    end

    def inspect
      "#<Shmetrics::Series #{family.name} #{family.label_names.zip(label_values).to_h.inspect}>"
    end
  end
end
