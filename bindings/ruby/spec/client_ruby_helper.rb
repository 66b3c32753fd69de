# frozen_string_literal: true

# Runs prometheus-client's own specs (from a pinned copy of the library,
# $CLIENT_RUBY_DIR) against Shmetrics::DataStore. scripts/ruby-tests.sh
# passes this file to rspec with `--require`, and the peer's spec files by
# path; none of them is copied here.
#
# The peer's metric specs set their store in `before` blocks
# (`config.data_store = Synchronized.new`, and DirectFileStore in its
# multi-process contexts). This helper puts Shmetrics::DataStore in the
# place of each of the peer's own stores, on a wiped shmetrics store, so
# every example runs on it. Examples that pass a store's settings to
# Synchronized (which takes none) therefore get ours.
client_ruby = ENV.fetch("CLIENT_RUBY_DIR") { abort "set CLIENT_RUBY_DIR to a copy of prometheus-client 4.2.5" }
$LOAD_PATH.unshift(File.join(client_ruby, "lib"), File.join(client_ruby, "spec"))
if (ext = ENV["SHMETRICS_RUBY_EXT_DIR"])
  $LOAD_PATH.unshift(ext, File.expand_path("../lib", __dir__))
end

require "tmpdir"
require "fileutils"
# The peer's spec_helper loads timecop (Debian's ruby-timecop, which
# scripts/ruby-tests.sh installs); gauge_spec.rb freezes time with it.
# Without it those two examples fail with a NameError, and the comparison
# with expected-failures.txt reports them.
begin
  require "timecop"
  Timecop.safe_mode = true
rescue LoadError
  warn "client_ruby_helper: timecop is not installed (apt-get install ruby-timecop)"
end
require "prometheus/client"
require "prometheus/client/data_stores/single_threaded"
require "prometheus/client/data_stores/direct_file_store"
require "shmetrics/data_store"

module ShmetricsSpec
  DIR = Dir.mktmpdir("shmetrics-client-ruby")
  STORE = Shmetrics::Store.new(File.join(DIR, "specs.shm"))
  at_exit { FileUtils.rm_rf(DIR) }

  PEER_STORES = [
    Prometheus::Client::DataStores::Synchronized,
    Prometheus::Client::DataStores::SingleThreaded,
    Prometheus::Client::DataStores::DirectFileStore
  ].freeze

  # A fresh Shmetrics::DataStore on the wiped store.
  def self.fresh
    STORE.wipe
    Shmetrics::DataStore.new(store: STORE)
  end

  # Config#data_store=, with the peer's stores replaced by ours.
  module ConfigSubstitution
    def data_store=(store)
      store = ShmetricsSpec.fresh if PEER_STORES.any? { |k| store.is_a?(k) }
      super(store)
    end
  end
  Prometheus::Client::Config.prepend(ConfigSubstitution)
end

RSpec.configure do |c|
  c.before(:each) { Prometheus::Client.config.data_store = ShmetricsSpec.fresh }
end
