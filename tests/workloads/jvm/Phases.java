// SPDX-License-Identifier: GPL-2.0
// tests/jvm/20-daemon.t: a JVM whose hot method changes: early() spins for the first
// args[0] seconds, late() after (both kept methods of their own by
// -XX:CompileCommand=dontinline), so late() is compiled after the first perf-map requests.
public class Phases {
	static long sink;

	static long early(long seed) {
		long x = seed;
		for (int i = 0; i < 1_000_000; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	static long late(long seed) {
		long x = seed;
		for (int i = 0; i < 1_000_000; i++)
			x = x * 2862933555777941757L + 3037000493L;
		return x;
	}

	public static void main(String[] args) {
		long switchAt = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		long x = 1;
		while (System.nanoTime() < switchAt)
			x = early(x);
		for (;;)
			x = late(x);
	}
}
