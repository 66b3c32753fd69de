# frozen_string_literal: true

require_relative "test_helper"
require "open3"
require "rubygems/package"

# `bundle install` of the gem into an app outside the checkout, offline,
# as a user does: it must compile the native part and load libshmetrics
# found through $SHMETRICS_LIBRARY, or through the system's library path.
class BundleTest < Minitest::Test
  GEM_DIR = File.expand_path("..", __dir__)
  CHECKOUT = File.expand_path("../../..", __dir__)

  def setup
    @app = Dir.mktmpdir("shmetrics-bundle")
    @store = File.join(@app, "app.shm")
  end

  def teardown
    FileUtils.rm_rf(@app)
  end

  # The app's script: an update, the page, and where the extension and
  # the library were loaded from.
  SCRIPT = <<~RUBY
    require "bundler/setup"
    require "shmetrics"
    store = Shmetrics::Store.new(ARGV[0])
    store.counter(:bundled, labels: [:via]).increment(labels: { via: ARGV[1] })
    puts store.render
    puts "ext=" + $LOADED_FEATURES.grep(/shmetrics_ext/).first
    puts "library=" + Shmetrics::Native.library
  RUBY

  # Runs `cmd` in the app's directory with a clean Ruby environment (no
  # GEM_HOME, GEM_PATH or RUBYLIB pointing into the checkout's build).
  def in_app(env, *cmd, chdir: @app)
    out, st = Open3.capture2e(clean_env.merge(env), *cmd, chdir: chdir)
    assert st.success?, "#{cmd.join(' ')}:\n#{out}"
    out
  end

  def clean_env
    { "GEM_HOME" => nil, "GEM_PATH" => nil, "RUBYLIB" => nil, "RUBYOPT" => nil,
      "BUNDLE_GEMFILE" => File.join(@app, "Gemfile"), "BUNDLE_PATH" => File.join(@app, "vendor/bundle"),
      "BUNDLE_APP_CONFIG" => File.join(@app, ".bundle"), "BUNDLE_DISABLE_SHARED_GEMS" => "true" }
  end

  def run_app(env, via)
    File.write(File.join(@app, "app.rb"), SCRIPT)
    out = in_app(env, "bundle", "exec", "ruby", "app.rb", @store, via)
    assert_includes out, %(bundled_total{via="#{via}"} 1)
    ext = out[/^ext=(.*)$/, 1]
    refute ext.start_with?(CHECKOUT), "the extension was built outside the checkout (#{ext})"
    out[/^library=(.*)$/, 1]
  end

  # A Gemfile pointing at the gem's source by `git:` (a repository of its
  # own, as a vendored copy would be): Bundler checks it out into the
  # app's bundle and compiles the native part there. The library comes
  # from $SHMETRICS_LIBRARY.
  def test_bundle_install_from_git_source
    repo = File.join(@app, "shmetrics-src")
    FileUtils.cp_r(GEM_DIR, repo)
    FileUtils.cp(File.join(CHECKOUT, "crates/ffi/include/shmetrics.h"), File.join(repo, "ext/shmetrics"))
    FileUtils.rm_f(File.join(repo, ".gitignore"))
    git = %w[git -c user.name=t -c user.email=t@t -c init.defaultBranch=main]
    [git + %w[init -q], git + %w[add -A], git + %w[commit -qm src]].each { |c| in_app({}, *c, chdir: repo) }
    File.write(File.join(@app, "Gemfile"), %(gem "shmetrics", git: #{repo.inspect}, branch: "main"\n))
    in_app({}, "bundle", "install", "--local", "--quiet")
    assert_equal ENV.fetch("SHMETRICS_LIBRARY"), run_app({}, "git")
  end

  # By `path:`, Bundler does not compile a gem's native extensions (its
  # path source installs none): the gem says so, and what to use instead.
  def test_bundle_install_by_path_says_to_compile
    File.write(File.join(@app, "Gemfile"), %(gem "shmetrics", path: #{GEM_DIR.inspect}\n))
    in_app({}, "bundle", "install", "--local", "--quiet")
    File.write(File.join(@app, "app.rb"), SCRIPT)
    out, st = Open3.capture2e(clean_env, "bundle", "exec", "ruby", "app.rb", @store, "path", chdir: @app)
    refute st.success?
    assert_includes out, "Bundler does not compile native extensions of gems given by `path:`"
  end

  # The gem as `gem build` makes it, from a local gem source (the app's
  # vendor/cache), installed with `bundle install --local`. The library is
  # found by the system's dynamic loader, through its SONAME, with no
  # $SHMETRICS_LIBRARY.
  def test_bundle_install_of_the_built_gem_with_the_system_library
    cache = File.join(@app, "vendor/cache")
    FileUtils.mkdir_p(cache)
    spec = Dir.chdir(GEM_DIR) { Gem::Specification.load("shmetrics.gemspec") }
    Gem::DefaultUserInteraction.use_ui(Gem::SilentUI.new) do
      Dir.chdir(GEM_DIR) { Gem::Package.build(spec, true, false, File.join(cache, spec.file_name)) }
    end
    File.write(File.join(@app, "Gemfile"), %(source "https://rubygems.org"\ngem "shmetrics", "#{spec.version}"\n))
    in_app({}, "bundle", "install", "--local", "--quiet")
    libdir = File.join(@app, "lib")
    FileUtils.mkdir_p(libdir)
    FileUtils.cp(ENV.fetch("SHMETRICS_LIBRARY"), File.join(libdir, "libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}"))
    library = run_app({ "SHMETRICS_LIBRARY" => nil, "LD_LIBRARY_PATH" => libdir }, "system")
    assert_equal "libshmetrics.so.#{Shmetrics::Native::ABI_MAJOR}", library
    assert_includes in_app({}, "bundle", "list"), "shmetrics (#{spec.version})"
  end
end
