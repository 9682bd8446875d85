package diagnose

// ShiftWarm is how many observations, one per scrape, a change's
// baseline learns before it judges: history read for the rules
// (Prometheus' backfill) holds as many at the scrape step before the
// part it judges, or a change there is met by a baseline still learning.
const ShiftWarm = shiftWarm
