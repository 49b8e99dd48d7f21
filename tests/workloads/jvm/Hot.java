// SPDX-License-Identifier: GPL-2.0
// tests/jvm/10-perfmap.t: hot() spins (run with -XX:CompileCommand=dontinline,Hot::hot so that
// the JIT keeps it a method of its own); main calls it forever.
public class Hot {
	static long sink;

	static long hot(long seed) {
		long x = seed;
		for (int i = 0; i < 1_000_000; i++)
			x = x * 6364136223846793005L + 1442695040888963407L;
		return x;
	}

	public static void main(String[] args) {
		long x = 1;
		for (;;)
			x = hot(x);
	}
}
