# frozen_string_literal: true

# shmetrics: Prometheus metrics for pre-fork Ruby servers (Puma cluster
# mode, Unicorn), in one shared-memory store per host. Workers update it in
# nanoseconds, without locks or system calls; `shmetrics serve` reads it
# and answers scrapes. See docs/ruby.md.
require "shmetrics/version"
require "shmetrics/errors"
begin
  require "shmetrics/shmetrics_ext"
rescue LoadError => e
  raise unless File.exist?(File.expand_path("../ext/shmetrics/extconf.rb", __dir__))

  # The gem's source tree without its compiled part: Bundler does not
  # compile the native extensions of `path:` gems.
  raise LoadError, "shmetrics: the gem's native part is not compiled (#{e.message}). Bundler does " \
                   "not compile native extensions of gems given by `path:`: use `git:`, or `gem build` " \
                   "the gem and install it (vendor/cache, `bundle install --local`); see docs/ruby.md, \"Install\""
end
require "shmetrics/native"
require "shmetrics/store"
require "shmetrics/metrics"
