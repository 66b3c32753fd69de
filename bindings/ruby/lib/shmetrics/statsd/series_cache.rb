# frozen_string_literal: true

module Shmetrics
  module StatsD
    # Series handles of one name by tags. A new but equal tags array or
    # hash must find its handle fast: as a Hash key it would be hashed and
    # compared through Ruby's recursion guard, which costs more than the
    # store update itself. So entries are keyed by the tags' `hash` (an
    # Integer key) and hold a frozen copy of the tags, compared with `==`
    # on a hit (a different tag set with the same hash, practically never
    # seen, gets its own entry in a short list).
    module SeriesCache
      class << self
        # The handle cached in `root` for `tags`, or nil.
        def find(root, tags)
          e = root[tags.hash] or return nil
          return e[1] if e[0] == tags

          e[2]&.each { |t, s| return s if t == tags }
          nil
        end

        # Caches `series` in `root` for `tags`.
        def store(root, tags, series)
          copy = frozen_copy(tags)
          e = root[tags.hash]
          if e.nil?
            root[tags.hash] = [copy, series]
          elsif e[0] != tags
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
