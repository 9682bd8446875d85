package sim

import "time"

// DemoConfig is the fleet `vtop --demo` watches: six replicas of two models,
// one of them data-parallel with two engines, all on the current
// generation. Incidents start on five of them from incidentsAfter of
// simulated time, some seconds apart, so the fleet degrades while you watch;
// qwen-a stays healthy for comparison.
func DemoConfig(incidentsAfter time.Duration) FleetConfig {
	d := incidentsAfter
	llama, qwen := Models[0], Models[1]
	at := func(name string, delay time.Duration) ScenarioSpec { return ScenarioSpec{Name: name, Delay: delay} }
	return FleetConfig{Replicas: []ReplicaConfig{
		{Name: "llama-a", Model: llama, Scenarios: []ScenarioSpec{at("prefix-cache-miss", d)}},
		{Name: "llama-b", Model: llama, Scenarios: []ScenarioSpec{at("kv-thrashing", d)}},
		{Name: "llama-dp", Model: llama, DP: 2, Scenarios: []ScenarioSpec{at("busy", 0), at("queue-backlog", d+30*time.Second)}},
		{Name: "qwen-a", Model: qwen, Scenarios: []ScenarioSpec{at("healthy", 0)}},
		{Name: "qwen-b", Model: qwen, Scenarios: []ScenarioSpec{at("thermal-throttle", d+15*time.Second)}},
		{Name: "qwen-c", Model: qwen, Scenarios: []ScenarioSpec{at("memory-leak", 0), at("flapping", d+45*time.Second)}},
	}}
}
