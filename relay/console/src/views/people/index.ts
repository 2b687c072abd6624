export { peopleView } from "./people";
