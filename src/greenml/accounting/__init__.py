"""Carbon and cost accounting: joules into grams of CO2eq and dollars, with sources."""
