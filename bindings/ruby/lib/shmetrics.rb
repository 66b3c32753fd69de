# frozen_string_literal: true

# shmetrics: Prometheus metrics for pre-fork Ruby servers (Puma cluster
# mode, Unicorn), in one shared-memory store per host. Workers update it in
# nanoseconds, without locks or system calls; `shmetrics serve` reads it
# and answers scrapes. See docs/ruby.md.
require "shmetrics/version"
require "shmetrics/errors"
require "shmetrics/shmetrics_ext"
require "shmetrics/native"
require "shmetrics/store"
require "shmetrics/metrics"
