# frozen_string_literal: true

# Loads the gem as installed by scripts/ruby-tests.sh (gem install into
# target/ruby/gems), or from this tree with SHMETRICS_RUBY_EXT_DIR set to a
# build of ext/shmetrics. libshmetrics comes from $SHMETRICS_LIBRARY.
if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
  $LOAD_PATH.unshift(ext, File.expand_path("../lib", __dir__))
end
require "minitest/autorun"
require "shmetrics"
require "tmpdir"
require "rbconfig"

# Runs Ruby code in a new process with this gem loaded.
module Subprocess
  # Runs `code`; returns [stdout, stderr, status]. `env` values of nil
  # unset variables.
  def ruby_run(code, env = {})
    require "open3"
    args = [RbConfig.ruby]
    if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
      args += ["-I", ext, "-I", File.expand_path("../lib", __dir__)]
    end
    Open3.capture3(env, *args, "-rshmetrics", "-e", code)
  end
end

module ShmetricsTest
  include Subprocess

  # A fresh store file per test, removed afterwards.
  def setup
    super
    @dir = Dir.mktmpdir("shmetrics-ruby")
    @path = File.join(@dir, "test.shm")
    @store = Shmetrics::Store.new(@path)
  end

  def teardown
    @store&.close
    FileUtils.rm_rf(@dir)
    super
  end

  # The sample lines of an exposition whose name starts with `prefix`.
  def samples(text, prefix)
    text.lines.map(&:chomp).select { |l| l.start_with?(prefix) }
  end
end
