package sqlite

// CountSQL is CountByState's query, for its plan's test.
const CountSQL = countSQL
