# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Series handles of one name by tags. A new but equal tags array or
    # hash must find its handle fast: as a Hash key it would be hashed and
    # compared through Ruby's recursion guard, which costs more than the
    # store update itself. So entries are keyed by `key(tags)` (an Integer)
    # and hold a frozen copy of the tags, compared with `same?` on a hit (a
    # different tag set with the same key, practically never seen, gets its
    # own entry in a short list).
    #
    # The lookups are in the gem's C extension (ext/shmetrics/series_cache.c):
    # `key` and `same?` hash and compare an Array of Strings string by
    # string, and a Hash of Symbols to Strings or Integers pair by pair in
    # any order (other tags use their own #hash and #==); `find(root, tags)`
    # returns the cached series or nil; `counter_add`, `gauge_set` and
    # `observe(root, tags, value)` update the cached series in the same
    # call and return true, or nil when none is cached.
    module SeriesCache
      class << self
        # Caches `series` in `root` for `tags`.
        def store(root, tags, series)
          copy = frozen_copy(tags)
          key = key(tags)
          e = root[key]
          if e.nil?
            root[key] = [copy, series]
          elsif !same?(e[0], tags)
            (e[2] ||= []) << [copy, series]
          end
          series
        end

        private

        def frozen_copy(tags)
          case tags
          when Array then tags.map { |t| t.frozen? ? t : t.dup.freeze }.freeze
          when Hash then tags.to_h { |k, v| [k, v.frozen? ? v : v.dup.freeze] }.freeze
          when String then tags.frozen? ? tags : tags.dup.freeze
          else tags
          end
        end
      end
    end
  end
end
