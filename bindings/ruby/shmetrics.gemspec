# frozen_string_literal: true

require_relative "lib/shmetrics/version"
require "fileutils"

# Built from the repository, the gem carries a copy of the C ABI's header
# (crates/ffi/include/shmetrics.h), so that `gem install` compiles its
# native part anywhere; the copy is not kept in git.
header = File.expand_path("../../crates/ffi/include/shmetrics.h", __dir__)
vendored = File.expand_path("ext/shmetrics/shmetrics.h", __dir__)
if File.exist?(header) && !(File.exist?(vendored) && FileUtils.identical?(header, vendored))
  FileUtils.cp(header, vendored)
end

Gem::Specification.new do |s|
  s.name = "shmetrics"
  s.version = Shmetrics::VERSION
  s.summary = "Prometheus metrics for pre-fork Ruby servers in one shared-memory store"
  s.description = <<~TEXT
    Ruby binding of shmetrics: counters, gauges, histograms and summaries in
    one shared-memory store per host, updated without locks by every Puma or
    Unicorn worker and served by one exporter (`shmetrics serve`). Includes a
    data store for prometheus-client (Shmetrics::DataStore). Needs
    libshmetrics (the C ABI) installed, or $SHMETRICS_LIBRARY pointing at it.
  TEXT
  s.license = "Apache-2.0"
  s.authors = ["shmetrics developers"]
  s.homepage = "https://example.invalid/shmetrics"
  s.required_ruby_version = ">= 2.7"
  s.files = Dir["lib/**/*.rb", "ext/shmetrics/*.{c,h,rb}", "README.md"]
  s.extensions = ["ext/shmetrics/extconf.rb"]
  s.require_paths = ["lib"]
end
