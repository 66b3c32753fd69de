# frozen_string_literal: true

require "socket"

module Shmetrics
  module StatsD
    # Sends what the store cannot hold (sets, events, service checks)
    # straight to the agent, one DogStatsD datagram per call, as
    # statsd-instrument's synchronous UDP sink does. These calls are rare
    # next to counters and timings; a lost datagram is not retried.
    class Passthrough
      attr_reader :host, :port

      def initialize(address)
        @host, port = address.split(/:(?=\d+\z)/)
        raise ArgumentError, "agent address #{address.inspect} is not HOST:PORT" unless port

        @host = @host.delete_prefix("[").delete_suffix("]")
        @port = Integer(port)
        @pid = nil
      end

      def set(name, value, sample_rate, tags)
        line = +"#{name}:#{value}|s"
        line << "|@#{sample_rate}" if sample_rate && sample_rate < 1
        send_line(line, tags)
      end

      def event(title, text, tags: nil, timestamp: nil, hostname: nil, aggregation_key: nil,
        priority: nil, source_type_name: nil, alert_type: nil)
        text = text.to_s.gsub("\n", "\\n")
        line = +"_e{#{title.bytesize},#{text.bytesize}}:#{title}|#{text}"
        line << "|d:#{timestamp.to_i}" if timestamp
        line << "|h:#{hostname}" if hostname
        line << "|k:#{aggregation_key}" if aggregation_key
        line << "|p:#{priority}" if priority
        line << "|s:#{source_type_name}" if source_type_name
        line << "|t:#{alert_type}" if alert_type
        send_line(line, tags)
      end

      STATUS = { ok: 0, warning: 1, critical: 2, unknown: 3 }.freeze

      def service_check(name, status, tags: nil, timestamp: nil, hostname: nil, message: nil)
        code = status.is_a?(Integer) ? status : STATUS.fetch(status.to_sym)
        line = +"_sc|#{name}|#{code}"
        line << "|d:#{timestamp.to_i}" if timestamp
        line << "|h:#{hostname}" if hostname
        line << "|##{tags.join(",")}" if tags
        line << "|m:#{message}" if message
        socket.send(line, 0)
      rescue SystemCallError
        nil
      end

      private

      def send_line(line, tags)
        line << "|##{tags.join(",")}" if tags
        socket.send(line, 0)
      rescue SystemCallError
        nil
      end

      # One socket per process: a socket made before a fork is not shared.
      def socket
        return @socket if @pid == Process.pid

        @pid = Process.pid
        @socket = UDPSocket.new(@host.include?(":") ? Socket::AF_INET6 : Socket::AF_INET)
        @socket.connect(@host, @port)
        @socket
      end
    end
  end
end
