# SPDX-License-Identifier: Apache-2.0
# gnuplot -e "data='sweep.dat'; out='inflight.png'[; drain=D; naive=N; naive_stream=S]" bench/inflight.gp
# sweep.dat: consumer.max_in_flight, intents/s, VmHWM kB (bench/measure.sh)
# drain, naive, naive_stream (intents/s, optional): chargeonce's backlog
# drain, the naive consumer's backlog drain and its streaming run (instant
# simulator), drawn as horizontal lines (bench/run.sh passes them)
if (!exists("drain")) drain = 0
if (!exists("naive")) naive = 0
if (!exists("naive_stream")) naive_stream = 0
set terminal pngcairo size 800,580 noenhanced
set output out
set title "chargeonce end to end, instant simulator: throughput vs in-flight limit,\nthe backlog drain and the naive consumer"
set xlabel "consumer.max_in_flight"
set ylabel "intents/s (produced -> result published)"
set logscale x
set logscale y
set grid
set key below left Left reverse height 1.5
line(v) = v > 0 ? v : 1/0
plot data using 1:2 with linespoints lw 2 pt 7 \
	title "chargeonce, streaming (sweep of max_in_flight)", \
	line(drain) with lines dt 2 lw 2 lc rgb "#1a9850" \
	title sprintf("chargeonce, backlog drain (defaults, 6 partitions): %.0f/s", drain), \
	line(naive) with lines dt 2 lw 2 lc rgb "#d73027" \
	title sprintf("naive consumer, backlog drain: %.0f/s (ratio %.1fx)", naive, naive > 0 ? drain / naive : 0), \
	line(naive_stream) with lines dt 3 lw 2 lc rgb "#fc8d59" \
	title sprintf("naive consumer, streaming: %.0f/s", naive_stream)
